/* acase_peek_id: a case file's top-level `id:` without reading the rest of it.
 *
 * `attnconf run --filter` selects a few cases out of hundreds; loading every file in full (its
 * tensors generated, its expected rows decoded) only to drop most of them cost seconds per run,
 * and more under ASan.  The id is the second key of every file casegen writes, so a streaming
 * parse stops after a handful of events.  Anything unexpected is left to acase_load_file, which
 * owns the errors: the peek only ever says "this id" or "don't know". */
#include "attncase/case.h"

#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "util.h"

/* A hand-written file may put `id:` after large values; past this many events the peek gives up
 * (the full load then decides), which also bounds the parser's state stack on hostile nesting. */
#define PEEK_MAX_EVENTS 4096

int acase_peek_id(const char *path, char *id, size_t idlen)
{
    if (!path || !id || idlen == 0)
        return -1;
    id[0] = '\0';
    FILE *f = acase__open_case_file(path, NULL, 0); /* never a FIFO: the load says why */
    if (!f)
        return -1;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        fclose(f);
        return -1;
    }
    yaml_parser_set_input_file(&p, f);
    int rc = -1, depth = 0, want_key = 0, id_next = 0;
    for (int n = 0; n < PEEK_MAX_EVENTS && rc == -1; n++) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev))
            break;
        yaml_event_type_t t = ev.type;
        int top = depth == 1; /* an event directly inside the root mapping */
        if (t == YAML_STREAM_END_EVENT || t == YAML_DOCUMENT_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT) {
            if (depth == 0 && t != YAML_MAPPING_START_EVENT) {
                yaml_event_delete(&ev);
                break; /* not a case mapping: the full load says so */
            }
            if (top) {
                if (want_key || id_next) { /* a complex key, or a non-scalar id */
                    yaml_event_delete(&ev);
                    break;
                }
                want_key = 1; /* this value done once its collection ends */
            }
            if (depth == 0)
                want_key = 1;
            depth++;
        } else if (t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT) {
            depth--;
        } else if (t == YAML_SCALAR_EVENT && top) {
            const char *s = (const char *)ev.data.scalar.value;
            size_t len = ev.data.scalar.length;
            if (want_key) {
                id_next = len == 2 && memcmp(s, "id", 2) == 0;
                want_key = 0;
            } else {
                if (id_next) {
                    if (len < idlen && memchr(s, '\0', len) == NULL) {
                        memcpy(id, s, len);
                        id[len] = '\0';
                        rc = 0;
                    } else {
                        yaml_event_delete(&ev);
                        break;
                    }
                }
                want_key = 1;
            }
        } else if (t == YAML_ALIAS_EVENT && top) {
            if (want_key || id_next) {
                yaml_event_delete(&ev);
                break;
            }
            want_key = 1;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    fclose(f);
    return rc;
}
