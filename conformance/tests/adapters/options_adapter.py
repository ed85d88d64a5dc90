#!/usr/bin/env python3
"""options_adapter.py -- TEST-ONLY exec adapter on attnconf_exec.py (needs numpy), for the
options of a hello (check_exec_py.py): options that apply to one variant only
(attnconf_exec.Option.applies) beside one that applies to every variant.

    variant  a or b (default a); the adapter is named options-<variant>; interrupt raises
             KeyboardInterrupt from open(), as a Ctrl-C in a library call would
    alpha    with variant=a only (default 1)
    beta     with variant=b only (no default)
    shared   every variant (no applies= at all, as adapters spelled an Option before it)

Its version is what open() received, key=value in declaration order.  It claims f32 and answers
every sdpa ENOTSUP: no scenario sends one.
"""

import os
import sys

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "adapters"))
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel


class OptionsAdapter:
    options = [
        ax.Option("variant", "a", "a or b"),
        ax.Option("alpha", "1", "variant a's knob", applies=lambda o: o["variant"] == "a"),
        ax.Option("beta", None, "variant b's knob", applies=lambda o: o["variant"] == "b"),
        ax.Option("shared", None, "any variant"),
    ]

    def open(self, options):
        if options["variant"] == "interrupt":
            raise KeyboardInterrupt
        if options["variant"] not in ("a", "b"):
            raise ax.Refusal(ax.EINVAL, f"variant={options['variant']!r}: expected a or b")
        got = ",".join(f"{k}={options[k]}" for k in ("variant", "alpha", "beta", "shared"))
        return ax.Identity(f"options-{options['variant']}", got, ["f32"])

    def sdpa(self, req):
        raise ax.Refusal(ax.ENOTSUP, "options_adapter computes nothing")


if __name__ == "__main__":
    ax.serve(OptionsAdapter())
