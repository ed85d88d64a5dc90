/* ywrite.c — the emitter helpers of ywrite.h (moved out of write.c, so that every op's writer
 * emits the same canonical texts). */
#include "ywrite.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "attncase/yread.h"
#include "util.h"

int ayw_init(ayw *w, FILE *f)
{
    memset(w, 0, sizeof *w);
    if (!yaml_emitter_initialize(&w->em))
        return -1;
    yaml_emitter_set_output_file(&w->em, f);
    yaml_emitter_set_width(&w->em, -1);
    yaml_emitter_set_unicode(&w->em, 1);
    yaml_emitter_set_indent(&w->em, 2);
    yaml_emitter_set_break(&w->em, YAML_LN_BREAK);
    return 0;
}

void ayw_delete(ayw *w)
{
    yaml_emitter_delete(&w->em);
}

void ayw_emit(ayw *w, yaml_event_t *ev, int ok)
{
    if (w->failed) {
        if (ok)
            yaml_event_delete(ev);
        return;
    }
    if (!ok || !yaml_emitter_emit(&w->em, ev))
        w->failed = 1; /* yaml_emitter_emit frees the event even when it fails */
}

void ayw_begin(ayw *w)
{
    yaml_event_t ev;
    ayw_emit(w, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
    ayw_emit(w, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
}

void ayw_end(ayw *w)
{
    yaml_event_t ev;
    ayw_emit(w, &ev, yaml_document_end_event_initialize(&ev, 1));
    ayw_emit(w, &ev, yaml_stream_end_event_initialize(&ev));
}

void ayw_scalar(ayw *w, const char *s, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    /* No tag, both implicit flags: the emitter never writes a tag, whatever style it picks. */
    ayw_emit(w, &ev,
             yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
                                          style));
}

void ayw_plain(ayw *w, const char *s)
{
    ayw_scalar(w, s, YAML_PLAIN_SCALAR_STYLE);
}

void ayw_string(ayw *w, const char *s)
{
    int kind = ayr_y11_resolve(s);
    if (kind < 0)
        w->failed = 1;
    ayw_scalar(w, s,
               kind == AYR_Y11_STR ? YAML_PLAIN_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

void ayw_map(ayw *w, int flow)
{
    yaml_event_t ev;
    ayw_emit(w, &ev,
             yaml_mapping_start_event_initialize(
                 &ev, NULL, NULL, 1, flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE));
}

void ayw_map_end(ayw *w)
{
    yaml_event_t ev;
    ayw_emit(w, &ev, yaml_mapping_end_event_initialize(&ev));
}

void ayw_seq(ayw *w, int flow)
{
    yaml_event_t ev;
    ayw_emit(w, &ev,
             yaml_sequence_start_event_initialize(
                 &ev, NULL, NULL, 1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE));
}

void ayw_seq_end(ayw *w)
{
    yaml_event_t ev;
    ayw_emit(w, &ev, yaml_sequence_end_event_initialize(&ev));
}

void ayw_int(ayw *w, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    ayw_plain(w, buf);
}

void ayw_kint(ayw *w, const char *key, int64_t v)
{
    ayw_plain(w, key);
    ayw_int(w, v);
}

void ayw_ints(ayw *w, const int64_t *a, int64_t n)
{
    ayw_seq(w, 1);
    for (int64_t i = 0; i < n && !w->failed; i++)
        ayw_int(w, a[i]);
    ayw_seq_end(w);
}

void ayw_kints(ayw *w, const char *key, const int64_t *a, int64_t n)
{
    ayw_plain(w, key);
    ayw_ints(w, a, n);
}

static int special(double d, char *buf, size_t n)
{
    if (isnan(d))
        snprintf(buf, n, ".nan");
    else if (isinf(d))
        snprintf(buf, n, d < 0 ? "-.inf" : ".inf");
    else
        return 0;
    return 1;
}

void ayw_double_short(ayw *w, double d)
{
    char buf[40];
    if (!special(d, buf, sizeof buf))
        acase__fmt_double_short(d, buf, sizeof buf);
    ayw_plain(w, buf);
}

void ayw_f64(ayw *w, double d)
{
    char buf[40];
    if (!special(d, buf, sizeof buf))
        snprintf(buf, sizeof buf, "%.16e", d);
    ayw_plain(w, buf);
}

void ayw_f32(ayw *w, float f)
{
    char buf[40];
    if (!special((double)f, buf, sizeof buf))
        snprintf(buf, sizeof buf, "%.8e", (double)f);
    ayw_plain(w, buf);
}

void ayw_doubles(ayw *w, const double *a, int64_t n, int shortest)
{
    ayw_seq(w, 1);
    for (int64_t i = 0; i < n && !w->failed; i++)
        (shortest ? ayw_double_short : ayw_f64)(w, a[i]);
    ayw_seq_end(w);
}
