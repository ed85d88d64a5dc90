/* perf_md.c — numbers, units and the machine line for the perf commands (perf_md.h). */
#include "perf_md.h"

#include "common/cli.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "common/md.h"

void pm_sig3(FILE *f, double x)
{
    if (!isfinite(x) || x < 0) {
        fputs(EM_DASH, f);
        return;
    }
    if (x == 0) {
        fputc('0', f);
        return;
    }
    /* Decimals so that 3 significant digits show; rounding may carry into a 4th digit
     * (999.7 -> "1000"), which is still the value to 3 digits. */
    int mag = (int)floor(log10(x));
    int dec = mag >= 2 ? 0 : 2 - mag;
    if (dec > 12)
        dec = 12;
    fprintf(f, "%.*f", dec, x);
}

void pm_time(FILE *f, double s)
{
    static const struct {
        double scale;
        const char *unit;
    } units[] = {{1e-9, "ns"}, {1e-6, "\xC2\xB5s"}, {1e-3, "ms"}, {1, "s"}};
    if (!isfinite(s) || s < 0) {
        fputs(EM_DASH, f);
        return;
    }
    size_t k = 0;
    /* The largest unit the value reaches once rounded to 3 digits (0.9996 ms is "1.00 ms"). */
    for (size_t i = 1; i < sizeof units / sizeof units[0]; i++)
        if (s >= units[i].scale * (1 - 5e-4))
            k = i;
    pm_sig3(f, s / units[k].scale);
    fprintf(f, " %s", units[k].unit);
}

void pm_p(FILE *f, double p)
{
    if (!isfinite(p))
        fputs(EM_DASH, f);
    else if (p < 1e-15)
        fputs("< 1e-15", f);
    else if (p >= 1e-3)
        fprintf(f, "%.2g", p);
    else
        fprintf(f, "%.1e", p);
}

void pm_machine(FILE *f, const pj_machine *m)
{
    md_text(f, m->cpu_model[0] ? m->cpu_model : "unknown CPU");
    fprintf(f, ", %lld core%s, %.1f GiB memory; limits: ", (long long)m->cores,
            m->cores == 1 ? "" : "s", (double)m->mem_bytes / (1024.0 * 1024 * 1024));
    pm_sig3(f, m->fma_gflops);
    fputs(" GFLOP/s f32 FMA, ", f);
    pm_sig3(f, m->mem_read_gbs);
    fputs(" GB/s memory read (", f);
    if (!strncmp(m->limits_from, "file:", 5)) {
        fputs("taken from ", f);
        md_code(f, m->limits_from + 5);
    } else {
        fputs("measured by `attnconf bench --peak`", f);
    }
    fputc(')', f);
    if (m->huge_pages == 1)
        fputs("; memory on huge pages (`--huge-pages`)", f);
}

int pm_open_out(const char *prog, const char *out, of_file *o)
{
    char why[512];
    if (of_open(o, out, why, sizeof why) == 0)
        return 0;
    fprintf(stderr, "%s: --out %s: %s\n", prog, out, why);
    return -1;
}

int pm_write_out(const char *prog, of_file *o, const char *buf, size_t len)
{
    if (of_write_commit(o, buf, len) != 0) {
        fprintf(stderr, "%s: %s: write error: %s\n", prog, o ? o->path : "<stdout>",
                strerror(errno));
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}
