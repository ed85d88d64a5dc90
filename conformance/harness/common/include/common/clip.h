/* clip.h — a long text cut to its head and tail, for error text a backend hands the harness.
 *
 * A library's error is often long (a compiler's is its whole command line, then many notes,
 * then the verdict at the end): keeping only its first bytes keeps the command line and loses
 * the verdict.  So a text over CLIP_MAX bytes keeps its first CLIP_HEAD and last CLIP_TAIL
 * bytes, cut at UTF-8 character boundaries, with " [... N bytes ...] " between them naming how
 * many bytes were left out.  Every place that stores a backend's error text (last_error, a
 * result's message, the JSON and the report that quote it) applies this one rule, through
 * clip_error: absolute paths under the current directory are made relative ("./...") first, so
 * where the cut falls, and the count in the marker, do not depend on where the checkout lies
 * (a Python traceback quotes site-packages under the build tree's venv). */
#ifndef ATTNCONF_COMMON_CLIP_H
#define ATTNCONF_COMMON_CLIP_H

#include <stddef.h>

#define CLIP_HEAD 200
#define CLIP_TAIL 600
/* The longest marker, " [... N bytes ...] " with N of 20 digits. */
#define CLIP_MARK_MAX 40
/* A text of at most this many bytes is kept whole; a clipped one is never longer, so clipping
 * a clipped text changes nothing. */
#define CLIP_MAX (CLIP_HEAD + CLIP_TAIL + CLIP_MARK_MAX)

/* src (NUL-terminated) into out (n bytes, NUL-terminated): whole when it has at most CLIP_MAX
 * bytes, else head, marker and tail as above.  n below CLIP_MAX + 1 truncates the result to
 * n - 1 bytes (at a character boundary); src and out must not overlap.  Returns out. */
char *clip_text(const char *src, char *out, size_t n);

/* s with every absolute path under the directory cwd made relative: cwd itself becomes ".".
 * A match must start a token (s's start or after one of  \t='"(:,) and end at '/', the end or
 * one of  \t'"),:; so "/a/bc" is not rewritten for a cwd of "/a/b".  An empty cwd, or "/",
 * changes nothing.  Returns a malloc'd string, or NULL when out of memory. */
char *clip_relative(const char *cwd, const char *s);

/* clip_text of src with paths under the process's current directory made relative first
 * (clip_relative; as is when getcwd or malloc fails).  The one way a backend's error text is
 * stored.  Returns out. */
char *clip_error(const char *src, char *out, size_t n);

#endif
