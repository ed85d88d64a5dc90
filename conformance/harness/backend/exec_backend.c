/* exec_backend.c — the `exec:` bridge: serve the attnconf_backend table by talking to an adapter
 * process over its stdin/stdout (PROTOCOL.md, version 1).
 *
 * The adapter is untrusted in the sense that matters for a conformance harness: it may die, hang,
 * print to stdout, or send a header that lies about its payload.  None of that may crash or hang
 * the harness, and none of it may be mistaken for a result: every such transport failure returns
 * HB_ETRANSPORT (ERROR in every case, a must-reject one included) with a reason that quotes the
 * adapter's last stderr line (--adapter-stderr FILE keeps all of it), kills the adapter's whole process group (the shell may have forked
 * the real program) and reaps it; the next call starts a fresh adapter with the same hello.
 *
 * Every read and write goes through poll() against one deadline per call (--timeout), on
 * non-blocking pipes, so a stuck adapter costs at most the timeout.  Sizes announced by the
 * adapter are checked against the case limits before any byte is read into harness memory.
 */
#define _GNU_SOURCE /* mkostemp */

#include "backend/exec_backend.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <jansson.h>

#include "attncase/case.h"
#include "backend/plugin.h"
#include "common/clip.h"
#include "common/clock.h"
#include "common/jsonv.h"
#include "common/proc.h"
#include "exec_reply.h"

extern char **environ;

#define XB_MAX_HEADER ((size_t)1 << 20)            /* PROTOCOL.md: 1 MiB, newline included */
#define XB_RBUF_SIZE (XB_MAX_HEADER + (64u << 10)) /* a header plus some payload read-ahead */
#define XB_CLOSE_GRACE_S 5.0                       /* PROTOCOL.md: killed 5 s after close */
#define XB_EXIT_WAIT_S 2.0  /* how long a closed pipe may precede the exit status we quote */
#define XB_STDERR_QUOTE 300 /* bytes of the adapter's last stderr line in a message */

typedef struct xb_ctx {
    attnconf_backend table; /* the template with this adapter's name, version and options */
    char *cmd;
    attnconf_option *opts; /* the user's options, deep copies: every restart resends them */
    size_t nopts;
    double timeout_s;
    proc_child proc; /* the running adapter: in_fd its stdin, fd its stdout; pid 0 = none */
    int err_fd;      /* unlinked temp file that receives the adapter's stderr; -1 = none */
    /* --adapter-stderr: err_fd's bytes are copied to log_fd (-1 = none), logged of them so
     * far; log_owned: log_fd was opened here (a FILE), not attnconf's stderr ("-"). */
    int log_fd, log_owned;
    off_t logged;
    char *log_path;
    int io_errno;
    unsigned char *rbuf; /* bytes read from stdout: [rpos, rlen) not consumed yet */
    size_t rpos, rlen;
    char name[65];
    char *version;
    uint64_t caps;
    int stride0_wire;            /* hello listed stride0.wire: stride-0 tensors go as they are */
    attnconf_option_info *oinfo; /* NULL-terminated; NULL when hello listed none */
    size_t noinfo;
    double last_seconds; /* the last sdpa reply's "seconds"; -1 = none (xb_last_seconds) */
    int served;          /* requests since the running adapter's hello (xb_restart) */
    char last_error[1024];
} xb_ctx;

enum { XB_IO_OK = 0, XB_IO_TIMEOUT, XB_IO_CLOSED, XB_IO_ERROR };

/* ---- small helpers ---------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static void xb_fmt(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

static void xb_close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* The adapter's last non-empty stderr line, trimmed to XB_STDERR_QUOTE bytes (at a UTF-8
 * boundary) and with control characters blanked; "" if there is none. */
static void xb_stderr_line(const xb_ctx *c, char *out, size_t n)
{
    out[0] = '\0';
    struct stat st;
    if (c->err_fd < 0 || fstat(c->err_fd, &st) != 0 || st.st_size <= 0)
        return;
    char buf[4096];
    off_t from = st.st_size > (off_t)sizeof buf ? st.st_size - (off_t)sizeof buf : 0;
    ssize_t got = pread(c->err_fd, buf, (size_t)(st.st_size - from), from);
    if (got <= 0)
        return;
    size_t end = (size_t)got;
    while (end > 0 && strchr("\n\r\t ", buf[end - 1]))
        end--;
    size_t start = end;
    while (start > 0 && buf[start - 1] != '\n')
        start--;
    while (start < end && strchr("\r\t ", buf[start]))
        start++;
    size_t len = end - start;
    int cut = len > XB_STDERR_QUOTE;
    if (cut) {
        len = XB_STDERR_QUOTE;
        while (len > 0 && ((unsigned char)buf[start + len] & 0xC0) == 0x80)
            len--;
    }
    snprintf(out, n, "%.*s%s", (int)len, buf + start, cut ? "..." : "");
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7F)
            *p = ' ';
}

/* Copy what the adapter wrote to stderr since the last copy to --adapter-stderr's target.  A
 * target that fails is warned about once and dropped: the run itself goes on. */
static void xb_log_stderr(xb_ctx *c)
{
    if (c->log_fd < 0 || c->err_fd < 0)
        return;
    char buf[1 << 16];
    ssize_t got;
    while ((got = pread(c->err_fd, buf, sizeof buf, c->logged)) > 0) {
        c->logged += got;
        for (ssize_t at = 0; at < got;) {
            ssize_t w = write(c->log_fd, buf + at, (size_t)(got - at));
            if (w > 0) {
                at += w;
                continue;
            }
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                struct pollfd pf = {c->log_fd, POLLOUT, 0};
                poll(&pf, 1, 1000);
                continue;
            }
            fprintf(stderr,
                    "attnconf: warning: --adapter-stderr %s: %s (the adapter's stderr is "
                    "no longer copied)\n",
                    c->log_path, w < 0 ? strerror(errno) : "nothing written");
            if (c->log_owned)
                close(c->log_fd);
            c->log_fd = -1;
            return;
        }
    }
}

/* ---- the process -------------------------------------------------------------------------- */

/* Kill the adapter's process group (leftover children of the shell included), reap the adapter
 * and close the pipes.  Keeps err_fd, after copying what is new in it to --adapter-stderr: the
 * caller may still quote it. */
static void xb_stop(xb_ctx *c)
{
    proc_reap(&c->proc, 1);
    c->rpos = c->rlen = 0;
    xb_log_stderr(c);
}

/* Start a fresh adapter.  Returns 0, or -1 with last_error set. */
static int xb_start(xb_ctx *c)
{
    xb_stop(c);
    xb_close_fd(&c->err_fd);
    const char *tmpdir = getenv("TMPDIR");
    char tmpl[PATH_MAX];
    xb_fmt(tmpl, sizeof tmpl, "%s/attnconf-adapter-stderr-XXXXXX",
           tmpdir && tmpdir[0] ? tmpdir : "/tmp");
    /* Stderr goes to a file, not a pipe: an adapter that logs a lot must never block on a pipe
     * nobody drains; its last line is quoted, and --adapter-stderr copies all of it. */
    c->err_fd = mkostemp(tmpl, O_CLOEXEC);
    if (c->err_fd < 0) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "cannot create a temporary file for the adapter's stderr in %s: %s",
               tmpdir && tmpdir[0] ? tmpdir : "/tmp", strerror(errno));
        return -1;
    }
    unlink(tmpl);
    c->logged = 0;

    size_t nenv = 0;
    while (environ && environ[nenv])
        nenv++;
    char **envp = calloc(nenv + 2, sizeof *envp);
    if (!envp) {
        xb_fmt(c->last_error, sizeof c->last_error, "out of memory");
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++)
        if (strncmp(environ[i], "ATTNCONF_PROTOCOL=", 18) != 0)
            envp[k++] = environ[i];
    envp[k++] = (char *)"ATTNCONF_PROTOCOL=1";
    envp[k] = NULL;
    int rc = proc_spawn(&c->proc, c->cmd, envp, c->err_fd, c->last_error, sizeof c->last_error);
    free(envp);
    c->rpos = c->rlen = 0;
    return rc;
}

/* ---- transport failures -------------------------------------------------------------------- */

/* Record `reason` (plus the adapter's last stderr line), end the adapter, return HB_ETRANSPORT.
 * exit_style: the reason describes the exit ("adapter exited with status 1"), so the stderr line
 * follows after ": "; otherwise it is added in parentheses. */
static int xb_finish(xb_ctx *c, const char *reason, int exit_style)
{
    char line[XB_STDERR_QUOTE + 8];
    xb_stop(c);
    xb_stderr_line(c, line, sizeof line);
    if (!line[0])
        xb_fmt(c->last_error, sizeof c->last_error, "%s%s", reason,
               exit_style ? " (nothing on stderr)" : "");
    else if (exit_style)
        xb_fmt(c->last_error, sizeof c->last_error, "%s: %s", reason, line);
    else
        xb_fmt(c->last_error, sizeof c->last_error, "%s (adapter stderr: %s)", reason, line);
    xb_close_fd(&c->err_fd);
    return HB_ETRANSPORT;
}

/* A reply that breaks PROTOCOL.md. */
__attribute__((format(printf, 2, 3))) static int xb_garbage(xb_ctx *c, const char *fmt, ...)
{
    char reason[768];
    int n = snprintf(reason, sizeof reason, "adapter reply: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason + n, sizeof reason - (size_t)n, fmt, ap);
    va_end(ap);
    return xb_finish(c, reason, 0);
}

/* An I/O failure (`what`: "sending sdpa", "waiting for the reply to sdpa"). */
static int xb_io_fail(xb_ctx *c, int io, const char *what)
{
    char reason[512];
    if (io == XB_IO_TIMEOUT) {
        xb_fmt(reason, sizeof reason, "adapter timed out after %g s %s", c->timeout_s, what);
        return xb_finish(c, reason, 0);
    }
    if (io == XB_IO_ERROR) {
        xb_fmt(reason, sizeof reason, "adapter pipe error %s: %s", what, strerror(c->io_errno));
        return xb_finish(c, reason, 0);
    }
    /* The adapter closed its end: most likely it is exiting; its status is the useful part. */
    int st;
    double wait = c->timeout_s < XB_EXIT_WAIT_S ? c->timeout_s : XB_EXIT_WAIT_S;
    if (c->proc.pid > 0 && proc_wait_exit(c->proc.pid, mono_now() + wait, &st)) {
        char how[160];
        proc_describe(st, how, sizeof how);
        xb_fmt(reason, sizeof reason, "adapter %s", how);
        return xb_finish(c, reason, 1);
    }
    xb_fmt(reason, sizeof reason, "adapter closed its %s %s",
           strncmp(what, "sending", 7) == 0 ? "stdin" : "stdout", what);
    return xb_finish(c, reason, 0);
}

/* ---- I/O with a deadline ------------------------------------------------------------------ */

static int xb_write_all(xb_ctx *c, const void *buf, size_t n, double deadline)
{
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t w = write(c->proc.in_fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EPIPE)
            return XB_IO_CLOSED;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = proc_poll(c->proc.in_fd, POLLOUT, deadline, 0);
            if (r == PROC_IO_TIMEOUT)
                return XB_IO_TIMEOUT;
            if (r == PROC_IO_ERROR) {
                c->io_errno = errno;
                return XB_IO_ERROR;
            }
            continue;
        }
        c->io_errno = w < 0 ? errno : EIO;
        return XB_IO_ERROR;
    }
    return XB_IO_OK;
}

/* Read once from the adapter into dst (at most n bytes), waiting up to the deadline.  Returns
 * XB_IO_OK with *got > 0, or a failure. */
static int xb_read_some(xb_ctx *c, void *dst, size_t n, double deadline, size_t *got)
{
    for (;;) {
        ssize_t r = read(c->proc.fd, dst, n);
        if (r > 0) {
            *got = (size_t)r;
            return XB_IO_OK;
        }
        if (r == 0)
            return XB_IO_CLOSED;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            c->io_errno = errno;
            return XB_IO_ERROR;
        }
        /* Its exit counts as EOF: a process it forked may hold the pipe open. */
        int p = proc_poll(c->proc.fd, POLLIN, deadline, c->proc.pid);
        if (p == PROC_IO_TIMEOUT)
            return XB_IO_TIMEOUT;
        if (p == PROC_IO_EXITED)
            return XB_IO_CLOSED; /* it exited; xb_io_fail quotes its status */
        if (p == PROC_IO_ERROR) {
            c->io_errno = errno;
            return XB_IO_ERROR;
        }
    }
}

/* Read the next header line.  Returns XB_IO_OK with *line (NUL-terminated in the buffer, valid
 * until the next read) and *len, a failure, or -1 for a line over the size limit. */
static int xb_read_line(xb_ctx *c, double deadline, char **line, size_t *len)
{
    size_t scanned = 0;
    for (;;) {
        unsigned char *start = c->rbuf + c->rpos;
        size_t avail = c->rlen - c->rpos;
        unsigned char *nl = memchr(start + scanned, '\n', avail - scanned);
        if (nl) {
            if ((size_t)(nl - start) + 1 > XB_MAX_HEADER)
                return -1;
            *nl = '\0';
            *line = (char *)start;
            *len = (size_t)(nl - start);
            c->rpos += *len + 1;
            return XB_IO_OK;
        }
        scanned = avail;
        if (avail >= XB_MAX_HEADER)
            return -1;
        if (c->rpos > 0) {
            memmove(c->rbuf, start, avail);
            c->rpos = 0;
            c->rlen = avail;
        }
        size_t got;
        int r = xb_read_some(c, c->rbuf + c->rlen, XB_RBUF_SIZE - c->rlen, deadline, &got);
        if (r != XB_IO_OK)
            return r;
        c->rlen += got;
    }
}

/* Read exactly n payload bytes into dst, or discard them when dst is NULL.  *done: the bytes
 * read (n on success), so a failure can say how far the payload got. */
static int xb_read_exact(xb_ctx *c, unsigned char *dst, size_t n, double deadline, size_t *done)
{
    size_t avail = c->rlen - c->rpos, take = avail < n ? avail : n;
    *done = take;
    if (dst) {
        memcpy(dst, c->rbuf + c->rpos, take);
        dst += take;
    }
    c->rpos += take;
    n -= take;
    if (c->rpos == c->rlen)
        c->rpos = c->rlen = 0;
    while (n > 0) {
        size_t got;
        unsigned char *to = dst ? dst : c->rbuf; /* the buffer is empty here: scratch space */
        size_t want = dst ? n : (n < XB_RBUF_SIZE ? n : XB_RBUF_SIZE);
        int r = xb_read_some(c, to, want, deadline, &got);
        if (r != XB_IO_OK)
            return r;
        if (dst)
            dst += got;
        n -= got;
        *done += got;
    }
    return XB_IO_OK;
}

/* ---- messages ------------------------------------------------------------------------------ */

/* A tensor to send: a buffer of nbytes and the strides that address it (dense, except for the
 * stride-0 axes of an adapter reading stride0.wire). */
typedef struct xb_payload {
    const void *data;
    size_t nbytes;
    void *owned; /* a contiguous copy, when the caller's strides were not a dense layout */
} xb_payload;

/* Describe tensor t as `name` into list and set up its payload.  Returns 0, or an ATTNCONF code
 * with last_error set. */
static int xb_add_tensor(xb_ctx *c, json_t *list, const char *name, const attnconf_tensor *t,
                         xb_payload *p)
{
    memset(p, 0, sizeof *p);
    size_t es = 0;
    const char *dt = xr_dtype_name(t->dtype, &es);
    if (!dt) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: tensor %s has dtype #%d, which the "
               "protocol cannot name",
               name, (int)t->dtype);
        return ATTNCONF_EINVAL;
    }
    if (t->ndim < 0 || t->ndim > ATTNCONF_MAX_RANK) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: tensor %s has rank %d", name,
               (int)t->ndim);
        return ATTNCONF_EINVAL;
    }
    int64_t numel = xr_numel(t->ndim, t->shape);
    if (numel < 0) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: tensor %s has a negative extent or more than %lld elements", name,
               (long long)XR_MAX_NUMEL);
        return ATTNCONF_EINVAL;
    }
    /* The extents the buffer holds: all of them, except that for an adapter reading
     * stride0.wire an axis broadcast with stride 0 is held once (PROTOCOL.md "Tensor
     * descriptors"), so it sees the broadcast its library is asked to handle. */
    int64_t held[ATTNCONF_MAX_RANK], strides[ATTNCONF_MAX_RANK];
    int broadcast[ATTNCONF_MAX_RANK];
    for (int32_t d = 0; d < t->ndim; d++) {
        broadcast[d] = c->stride0_wire && numel > 0 && t->shape[d] > 1 && t->strides[d] == 0;
        held[d] = broadcast[d] ? 1 : t->shape[d];
        strides[d] = t->strides[d];
    }
    const int64_t nheld = xr_numel(t->ndim, held);
    p->nbytes = (size_t)nheld * es;
    p->data = t->data;
    if (nheld > 0 && !xr_dense_perm(t->ndim, held, t->strides)) {
        /* Gapped strides (or, for another adapter, broadcast ones): the protocol sends a dense
         * buffer, so gather a row-major copy of the held elements. */
        unsigned char *buf = malloc(p->nbytes);
        if (!buf) {
            xb_fmt(c->last_error, sizeof c->last_error, "exec: out of memory for tensor %s", name);
            return ATTNCONF_ENOMEM;
        }
        int64_t idx[ATTNCONF_MAX_RANK] = {0, 0, 0, 0};
        for (int64_t i = 0; i < nheld; i++) {
            int64_t off = 0;
            for (int32_t d = 0; d < t->ndim; d++)
                off += idx[d] * t->strides[d];
            memcpy(buf + (size_t)i * es, (const unsigned char *)t->data + (size_t)off * es, es);
            for (int32_t d = t->ndim - 1; d >= 0; d--) {
                if (++idx[d] < held[d])
                    break;
                idx[d] = 0;
            }
        }
        int64_t s = 1;
        for (int32_t d = t->ndim - 1; d >= 0; d--) {
            strides[d] = broadcast[d] ? 0 : s;
            s *= held[d];
        }
        p->data = buf;
        p->owned = buf;
    }
    json_t *shape = json_array(), *st = json_array(), *o = json_object();
    int err = !shape || !st || !o;
    for (int32_t d = 0; !err && d < t->ndim; d++)
        err |= json_array_append_new(shape, json_integer(t->shape[d])) != 0 ||
               json_array_append_new(st, json_integer(strides[d])) != 0;
    if (!err)
        err |= json_object_set_new(o, "name", json_string(name)) != 0 ||
               json_object_set_new(o, "dtype", json_string(dt)) != 0 ||
               json_object_set(o, "shape", shape) != 0 || json_object_set(o, "strides", st) != 0 ||
               json_object_set_new(o, "nbytes", json_integer((json_int_t)p->nbytes)) != 0 ||
               json_array_append(list, o) != 0;
    json_decref(shape);
    json_decref(st);
    json_decref(o);
    if (err) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: out of memory describing %s", name);
        return ATTNCONF_ENOMEM;
    }
    return 0;
}

/* Encode a header, adding "protocol": 1 first. */
static char *xb_dump(json_t *h)
{
    return json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
}

/* A tensor a success reply carries: its name, where its payload goes and how many bytes fit. */
typedef struct xb_want {
    const char *name;
    attnconf_tensor *out;
    size_t capacity;
} xb_want;

/* One exchange: send header h (+ payloads), read the reply.  `op` names the request in messages.
 * want[0..nwant): the tensors a success reply carries ("out", "keep"; paged_append's two), none
 * for hello.  *reply receives the parsed header (the caller decrefs) when the adapter answered.
 * Returns the reply's status (0 .. -6) with last_error = its error text, or HB_ETRANSPORT /
 * another ATTNCONF code with last_error set. */
static int xb_exchange(xb_ctx *c, json_t *h, const xb_payload *pl, size_t npl, const char *op,
                       const xb_want *want, size_t nwant, json_t **reply)
{
    *reply = NULL;
    char what[64];
    double deadline = mono_now() + c->timeout_s;
    if (c->rlen > c->rpos)
        return xb_garbage(c,
                          "%zu unexpected bytes on stdout after the previous reply "
                          "(stdout must carry only the protocol; log to stderr)",
                          c->rlen - c->rpos);
    char *text = xb_dump(h);
    if (!text) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: cannot encode the %s request", op);
        return ATTNCONF_ENOMEM;
    }
    size_t tl = strlen(text);
    if (tl + 1 > XB_MAX_HEADER) {
        /* The id rows of a long batch can outgrow the 1 MiB every reader may assume: the
         * request cannot be framed, and the adapter, which has seen nothing, keeps running. */
        free(text);
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: the %s request header would be %zu bytes, over the protocol's 1 MiB", op,
               tl + 1);
        return HB_ETRANSPORT;
    }
    text[tl] = '\n'; /* json_dumps's terminator becomes the framing newline */
    xb_fmt(what, sizeof what, "sending %s", op);
    int io = xb_write_all(c, text, tl + 1, deadline);
    free(text);
    for (size_t i = 0; io == XB_IO_OK && i < npl; i++)
        io = xb_write_all(c, pl[i].data, pl[i].nbytes, deadline);
    if (io != XB_IO_OK)
        return xb_io_fail(c, io, what);

    xb_fmt(what, sizeof what, "waiting for the reply to %s", op);
    char *line;
    size_t len;
    io = xb_read_line(c, deadline, &line, &len);
    if (io < 0)
        return xb_garbage(c, "header longer than 1 MiB (or no newline)");
    if (io != XB_IO_OK)
        return xb_io_fail(c, io, what);
    xr_reply rp;
    char why[768];
    const char *names[XR_MAX_REPLY_TENSORS];
    for (size_t i = 0; i < nwant && i < XR_MAX_REPLY_TENSORS; i++)
        names[i] = want[i].name;
    int bad = xr_parse_n(line, len, op, names, nwant, &rp, why, sizeof why);
    *reply = rp.root;
    if (bad)
        return xb_garbage(c, "%s", why);
    if (rp.status != 0) {
        clip_error(rp.error, c->last_error, sizeof c->last_error);
        return rp.status;
    }
    for (size_t i = 0; i < rp.ntensors; i++) {
        const xr_desc d = rp.descs[i];
        attnconf_tensor *out = want[i].out;
        /* A reply that does not fit (another shape, a wider dtype) is drained, not stored:
         * run.c then judges the descriptor (shape / dtype) as it would a plugin's. */
        int fits = d.nbytes <= want[i].capacity;
        size_t done;
        io = xb_read_exact(c, fits ? out->data : NULL, d.nbytes, deadline, &done);
        if (io == XB_IO_TIMEOUT) {
            /* The header came: the adapter is not silent but stuck (or it announced more than
             * it sends), and how far its payload got tells which. */
            char reason[256];
            xb_fmt(reason, sizeof reason,
                   "adapter timed out after %g s: reply to %s: payload of '%s' %zu of %zu "
                   "bytes received",
                   c->timeout_s, op, want[i].name, done, d.nbytes);
            return xb_finish(c, reason, 0);
        }
        if (io == XB_IO_CLOSED) {
            char reason[256];
            xb_fmt(reason, sizeof reason,
                   "adapter reply: payload of '%s' shorter than its %zu bytes (adapter closed "
                   "stdout)",
                   want[i].name, d.nbytes);
            return xb_finish(c, reason, 0);
        }
        if (io != XB_IO_OK)
            return xb_io_fail(c, io, what);
        out->dtype = d.dtype;
        out->ndim = d.ndim;
        memset(out->shape, 0, sizeof out->shape);
        memset(out->strides, 0, sizeof out->strides);
        memcpy(out->shape, d.shape, sizeof d.shape);
        memcpy(out->strides, d.strides, sizeof d.strides);
    }
    return 0;
}

/* xb_exchange, then what the adapter wrote to stderr meanwhile to --adapter-stderr. */
static int xb_call_n(xb_ctx *c, json_t *h, const xb_payload *pl, size_t npl, const char *op,
                     const xb_want *want, size_t nwant, json_t **reply)
{
    int rc = xb_exchange(c, h, pl, npl, op, want, nwant, reply);
    xb_log_stderr(c);
    c->served = strcmp(op, "hello") == 0 ? 0 : c->served + 1;
    return rc;
}

/* xb_call_n for a reply of one tensor (want_tensor, into out) or none (want_tensor NULL). */
static int xb_call(xb_ctx *c, json_t *h, const xb_payload *pl, size_t npl, const char *op,
                   const char *want_tensor, attnconf_tensor *out, size_t capacity, json_t **reply)
{
    const xb_want w = {want_tensor, out, capacity};
    return xb_call_n(c, h, pl, npl, op, &w, want_tensor ? 1 : 0, reply);
}

/* ---- hello --------------------------------------------------------------------------------- */

static void xb_free_info(xb_ctx *c)
{
    for (size_t i = 0; c->oinfo && i < c->noinfo; i++) {
        free((char *)c->oinfo[i].key);
        free((char *)c->oinfo[i].default_value);
        free((char *)c->oinfo[i].help);
    }
    free(c->oinfo);
    c->oinfo = NULL;
    c->noinfo = 0;
}

static char *xb_strdup_or_null(json_t *s)
{
    return json_is_string(s) ? strdup(json_string_value(s)) : NULL;
}

/* Take name, version, capabilities and options from a hello reply.  Returns 0, or
 * HB_ETRANSPORT (the adapter is stopped) with last_error set. */
static int xb_take_hello(xb_ctx *c, json_t *r)
{
    xr_hello hl;
    char why[768];
    if (xr_hello_take(r, &hl, why, sizeof why))
        return xb_garbage(c, "%s", why);
    const size_t no = hl.noptions;
    json_t *jo = hl.options;
    xb_free_info(c);
    if (no) {
        c->oinfo = calloc(no + 1, sizeof *c->oinfo);
        if (!c->oinfo) {
            xb_stop(c);
            xb_fmt(c->last_error, sizeof c->last_error, "out of memory");
            return HB_ETRANSPORT;
        }
        c->noinfo = no;
        for (size_t i = 0; i < no; i++) {
            json_t *e = json_array_get(jo, i);
            c->oinfo[i].key = strdup(json_string_value(json_object_get(e, "key")));
            c->oinfo[i].default_value = xb_strdup_or_null(json_object_get(e, "default"));
            c->oinfo[i].help = xb_strdup_or_null(json_object_get(e, "help"));
            if (!c->oinfo[i].key) {
                xb_stop(c);
                xb_fmt(c->last_error, sizeof c->last_error, "out of memory");
                return HB_ETRANSPORT;
            }
        }
    }
    char *version = strdup(hl.version);
    if (!version) {
        xb_stop(c);
        xb_fmt(c->last_error, sizeof c->last_error, "out of memory");
        return HB_ETRANSPORT;
    }
    free(c->version);
    c->version = version;
    snprintf(c->name, sizeof c->name, "%s", hl.name);
    c->caps = hl.caps;
    c->stride0_wire = hl.stride0_wire;
    return 0;
}

/* Start the adapter and say hello.  initial: keep what the reply says (the first start); a
 * restart only checks that it still accepts the options.  Returns 0; 1 if the adapter refused
 * (last_error = "adapter refused hello: ERROR"); or HB_ETRANSPORT / another negative code with
 * last_error set.  The adapter is stopped on any failure. */
static int xb_hello(xb_ctx *c, int initial)
{
    if (xb_start(c) != 0)
        return HB_ETRANSPORT;
    json_t *h = json_object(), *o = json_object();
    int err = !h || !o;
    if (!err)
        err |= json_object_set_new(h, "protocol", json_integer(1)) != 0 ||
               json_object_set_new(h, "op", json_string("hello")) != 0;
    for (size_t i = 0; !err && i < c->nopts; i++) {
        json_t *v = json_string(c->opts[i].value);
        if (!v) {
            json_decref(h);
            json_decref(o);
            xb_stop(c);
            xb_fmt(c->last_error, sizeof c->last_error, "option '%s': the value is not valid UTF-8",
                   c->opts[i].key);
            return ATTNCONF_EINVAL;
        }
        err |= json_object_set_new(o, c->opts[i].key, v) != 0;
    }
    if (!err)
        err |= json_object_set(h, "options", o) != 0;
    json_decref(o);
    if (err) {
        json_decref(h);
        xb_stop(c);
        xb_fmt(c->last_error, sizeof c->last_error, "out of memory");
        return ATTNCONF_ENOMEM;
    }
    json_t *r = NULL;
    int rc = xb_call(c, h, NULL, 0, "hello", NULL, NULL, 0, &r);
    json_decref(h);
    if (rc < 0 && rc != HB_ETRANSPORT && r) { /* the adapter answered with an error status */
        char msg[sizeof c->last_error];
        snprintf(msg, sizeof msg, "%s", c->last_error);
        xb_stop(c);
        xb_fmt(c->last_error, sizeof c->last_error, "adapter refused hello: %s", msg);
        rc = 1;
    } else if (rc == 0 && initial) {
        rc = xb_take_hello(c, r);
    }
    if (rc != 0)
        xb_stop(c);
    json_decref(r);
    return rc;
}

/* Make sure an adapter is running (restarting one that failed).  Returns 0 or HB_ETRANSPORT. */
static int xb_ensure(xb_ctx *c)
{
    if (c->proc.pid > 0)
        return 0;
    int rc = xb_hello(c, 0);
    if (rc == 0)
        return 0;
    char msg[sizeof c->last_error];
    snprintf(msg, sizeof msg, "%s", c->last_error);
    xb_stop(c);
    xb_fmt(c->last_error, sizeof c->last_error, "adapter restart failed: %s", msg);
    return HB_ETRANSPORT;
}

/* ---- the table ----------------------------------------------------------------------------- */

static int xb_open_plain(void **ctx)
{
    /* Never called: an exec context needs a command line (xb_open). */
    *ctx = NULL;
    return ATTNCONF_ENOTSUP;
}

static int xb_open_with_options(void **ctx, const attnconf_option *o, size_t n, char *err,
                                size_t errlen)
{
    (void)o;
    (void)n;
    *ctx = NULL;
    if (err && errlen)
        snprintf(err, errlen, "an exec: backend is opened by xb_open");
    return ATTNCONF_ENOTSUP;
}

static uint64_t xb_caps(void *ctx)
{
    return ctx ? ((xb_ctx *)ctx)->caps : 0;
}

static const char *xb_last_error(void *ctx)
{
    return ctx ? ((xb_ctx *)ctx)->last_error : "";
}

static json_t *xb_int_list(const int64_t *v, int64_t n);

/* `n` doubles as a JSON list (non-finite values as the strings of jsonv_num), or NULL. */
static json_t *xb_f32_list(const float *v, int64_t n)
{
    json_t *a = json_array();
    for (int64_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, jsonv_num((double)v[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* A [rows * cols] row-major int64 array as `rows` JSON lists of `cols` integers (the
 * "positions" form of cache_state), or NULL when out of memory. */
static json_t *xb_int_rows(const int64_t *v, int64_t rows, int64_t cols)
{
    json_t *a = json_array();
    for (int64_t b = 0; a && b < rows; b++) {
        json_t *row = xb_int_list(v + b * cols, cols);
        if (!row || json_array_append_new(a, row) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* segment_ids / block_ids (fifth revision, [rows * cols]) into h as row lists, each only when
 * set.  Returns 0 or ATTNCONF_ENOMEM. */
static int xb_id_rows(json_t *h, const int64_t *segment_ids, const int64_t *block_ids, int64_t rows,
                      int64_t cols)
{
    const char *names[2] = {"segment_ids", "block_ids"};
    const int64_t *arrays[2] = {segment_ids, block_ids};
    for (int i = 0; i < 2; i++) {
        if (!arrays[i])
            continue;
        json_t *l = xb_int_rows(arrays[i], rows, cols);
        if (!l || json_object_set_new(h, names[i], l))
            return ATTNCONF_ENOMEM;
    }
    return 0;
}

/* The mask parameters (SPEC clause 19) and the terms of current models (clauses 20-22) into
 * the sdpa header, each only when set: the host sets each only for an adapter reporting its
 * capability (sdpa.window ... sdpa.blocks), so every other adapter sees the first-revision
 * header unchanged.  lengths / left_padding have one entry per batch row of q, sinks one per
 * query head, segment_ids / block_ids one row of Lk per batch row.  Returns 0 or a status
 * (with last_error set). */
static int xb_sdpa_params(xb_ctx *c, const attnconf_sdpa_args *a, json_t *h)
{
    if (a->struct_size < offsetof(attnconf_sdpa_args, left_padding) + sizeof a->left_padding)
        return 0;
    const int fifth =
        a->struct_size >= offsetof(attnconf_sdpa_args, block_ids) + sizeof a->block_ids;
    const int64_t *segment_ids = fifth ? a->segment_ids : NULL;
    const int64_t *block_ids = fifth ? a->block_ids : NULL;
    const float *sinks = fifth ? a->sinks : NULL;
    if ((a->lengths || a->left_padding || segment_ids || block_ids) &&
        (a->q->ndim < 1 || a->q->shape[0] < 0 || a->q->shape[0] > ACASE_MAX_TENSOR_NUMEL)) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: lengths / left_padding / segment_ids / block_ids need a q with a batch "
               "dimension");
        return ATTNCONF_EINVAL;
    }
    const int64_t nb = a->q->ndim >= 1 ? a->q->shape[0] : 0;
    /* The id rows are [B, Lk]: Lk is k's key axis, and the product must be a size the host
     * could have allocated. */
    if ((segment_ids || block_ids) &&
        (a->k->ndim != 4 || a->k->shape[2] < 0 || a->k->shape[2] > ACASE_MAX_TENSOR_NUMEL ||
         (a->k->shape[2] > 0 && nb > ACASE_MAX_TENSOR_NUMEL / a->k->shape[2]))) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: segment_ids / block_ids need a rank-4 k whose B * Lk is in range");
        return ATTNCONF_EINVAL;
    }
    if (sinks && (a->q->ndim < 2 || a->q->shape[1] < 0 || a->q->shape[1] > ACASE_MAX_BATCH)) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: sinks need a q with a head dimension of at most %d", ACASE_MAX_BATCH);
        return ATTNCONF_EINVAL;
    }
    const char *names[2] = {"lengths", "left_padding"};
    const int64_t *arrays[2] = {a->lengths, a->left_padding};
    if (a->window != 0 && json_object_set_new(h, "window", json_integer(a->window)))
        goto oom;
    for (int i = 0; i < 2; i++) {
        if (!arrays[i])
            continue;
        json_t *l = xb_int_list(arrays[i], nb);
        if (!l || json_object_set_new(h, names[i], l))
            goto oom;
    }
    if (!fifth)
        return 0;
    /* A must-reject case's softcap or bias may be negative or non-finite: "nan", "inf",
     * "-inf" as for the scale.  0 means none and is never sent. */
    if ((a->softcap != 0 && json_object_set_new(h, "softcap", jsonv_num(a->softcap))) ||
        (a->alibi_max_bias != 0 &&
         json_object_set_new(h, "alibi_max_bias", jsonv_num(a->alibi_max_bias))) ||
        (a->chunk != 0 && json_object_set_new(h, "chunk", json_integer(a->chunk))))
        goto oom;
    if (sinks) {
        json_t *l = xb_f32_list(sinks, a->q->shape[1]);
        if (!l || json_object_set_new(h, "sinks", l))
            goto oom;
    }
    if (xb_id_rows(h, segment_ids, block_ids, nb, a->k->ndim == 4 ? a->k->shape[2] : 0))
        goto oom;
    return 0;
oom:
    xb_fmt(c->last_error, sizeof c->last_error, "exec: out of memory");
    return ATTNCONF_ENOMEM;
}

/* The optional "seconds" of an sdpa success reply r (PROTOCOL.md "sdpa") into last_seconds:
 * absent leaves it -1; anything but a finite JSON number >= 0, or one longer than the exchange
 * itself took (exchange_s, by the harness's clock, with the slack above), is a reply that
 * breaks the protocol. */
static int xb_take_seconds(xb_ctx *c, json_t *r, double exchange_s)
{
    char why[768];
    if (xr_seconds(r, exchange_s, &c->last_seconds, why, sizeof why))
        return xb_garbage(c, "%s", why);
    return 0;
}

double xb_last_seconds(void *ctx)
{
    return ctx ? ((xb_ctx *)ctx)->last_seconds : -1;
}

/* The request of an sdpa call (op "sdpa") or of its reproducer (op "repro", with the members of
 * extra): the header *h and the payloads pl[0..*npl) of q, k, v and the mask.  On failure the
 * caller still frees what was made (*h, pl[i].owned for i < *npl), as after a call. */
static int xb_sdpa_request(xb_ctx *c, const attnconf_sdpa_args *a, const char *op, json_t *extra,
                           json_t **h_out, xb_payload pl[4], size_t *npl)
{
    json_t *h = json_object(), *list = json_array();
    *h_out = h;
    *npl = 0;
    int rc = ATTNCONF_ENOMEM;
    if (!h || !list || json_object_set_new(h, "protocol", json_integer(1)) ||
        json_object_set_new(h, "op", json_string(op)) ||
        json_object_set_new(h, "causal", json_boolean(a->causal != 0)) ||
        json_object_set_new(h, "causal_offset",
                            a->has_causal_offset ? json_integer(a->causal_offset) : json_null()) ||
        json_object_set_new(h, "scale", !a->has_scale ? json_null() : jsonv_num(a->scale)) ||
        (extra && json_object_update(h, extra)) || json_object_set(h, "tensors", list)) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: out of memory");
        goto done;
    }
    rc = xb_sdpa_params(c, a, h);
    if (rc)
        goto done;
    static const char *const names[4] = {"q", "k", "v", "mask"};
    const attnconf_tensor *ts[4] = {a->q, a->k, a->v, a->mask};
    for (int i = 0; i < 4; i++) {
        if (!ts[i])
            continue;
        rc = xb_add_tensor(c, list, names[i], ts[i], &pl[*npl]);
        if (rc)
            goto done;
        (*npl)++;
    }
done:
    json_decref(list); /* h holds its own reference */
    return rc;
}

/* One exchange of an sdpa-shaped request (xb_sdpa_request): the adapter started if need be, the
 * request sent, its reply *r (to json_decref) read, the output (if out) filled; *call_s the
 * seconds of the exchange alone, by the harness's clock (the bound of the reply's "seconds"). */
static int xb_sdpa_exchange(xb_ctx *c, const attnconf_sdpa_args *a, const char *op, json_t *extra,
                            attnconf_tensor *out, size_t out_capacity, json_t **r, double *call_s)
{
    *r = NULL;
    int rc = xb_ensure(c);
    if (rc)
        return rc;
    xb_payload pl[4];
    size_t npl = 0;
    json_t *h = NULL;
    rc = xb_sdpa_request(c, a, op, extra, &h, pl, &npl);
    if (rc == 0) {
        const double t0 = mono_now();
        rc = xb_call(c, h, pl, npl, op, out ? "out" : NULL, out, out_capacity, r);
        *call_s = mono_now() - t0;
    }
    for (size_t i = 0; i < npl; i++)
        free(pl[i].owned);
    json_decref(h);
    return rc;
}

static int xb_sdpa(void *ctx, const attnconf_sdpa_args *a)
{
    xb_ctx *c = ctx;
    c->last_error[0] = '\0';
    c->last_seconds = -1;
    if (!a || !a->q || !a->k || !a->v || !a->out) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: sdpa without q, k, v or out");
        return ATTNCONF_EINVAL;
    }
    json_t *r = NULL;
    double call_s = 0;
    int rc = xb_sdpa_exchange(c, a, "sdpa", NULL, a->out, a->out_capacity, &r, &call_s);
    if (rc == 0)
        rc = xb_take_seconds(c, r, call_s);
    json_decref(r);
    return rc;
}

/* A [batch] int64 array as JSON, or null. */
static json_t *xb_int_list(const int64_t *v, int64_t n)
{
    if (!v)
        return json_null();
    json_t *a = json_array();
    for (int64_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_integer(v[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static int xb_build_mask(void *ctx, const attnconf_mask_args *a)
{
    xb_ctx *c = ctx;
    c->last_error[0] = '\0';
    if (!a || !a->keep) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: build_mask without keep");
        return ATTNCONF_EINVAL;
    }
    const int fifth =
        a->struct_size >= offsetof(attnconf_mask_args, block_ids) + sizeof a->block_ids;
    const int64_t *segment_ids = fifth ? a->segment_ids : NULL;
    const int64_t *block_ids = fifth ? a->block_ids : NULL;
    if ((a->lengths || a->left_padding || segment_ids || block_ids) &&
        (a->batch < 0 || a->batch > ACASE_MAX_TENSOR_NUMEL)) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: batch %lld out of range",
               (long long)a->batch);
        return ATTNCONF_EINVAL;
    }
    /* The id rows are [batch, Lk], Lk = kv_len or offset + lq (backend.h): parameters that
     * give no such size cannot be read, let alone sent. */
    const int has_kv_len =
        a->struct_size >= offsetof(attnconf_mask_args, kv_len) + sizeof a->kv_len && a->kv_len;
    int64_t lk = has_kv_len ? a->kv_len : 0;
    if ((segment_ids || block_ids) &&
        ((!has_kv_len && __builtin_add_overflow(a->offset, a->lq, &lk)) || lk < 0 ||
         lk > ACASE_MAX_TENSOR_NUMEL || (lk > 0 && a->batch > ACASE_MAX_TENSOR_NUMEL / lk))) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: segment_ids / block_ids need batch * Lk in range (batch %lld, Lk %lld)",
               (long long)a->batch, (long long)lk);
        return ATTNCONF_EINVAL;
    }
    int rc = xb_ensure(c);
    if (rc)
        return rc;
    json_t *h = json_object(), *r = NULL;
    json_t *len = xb_int_list(a->lengths, a->batch), *lp = xb_int_list(a->left_padding, a->batch);
    if (!h || !len || !lp || json_object_set_new(h, "protocol", json_integer(1)) ||
        json_object_set_new(h, "op", json_string("build_mask")) ||
        json_object_set_new(h, "lq", json_integer(a->lq)) ||
        json_object_set_new(h, "offset", json_integer(a->offset)) ||
        json_object_set_new(h, "window", json_integer(a->window)) ||
        json_object_set_new(h, "batch", json_integer(a->batch)) ||
        json_object_set(h, "lengths", len) || json_object_set(h, "left_padding", lp) ||
        /* a static key buffer: sent only when set (the host sets it only for an adapter
         * reporting mask.kv_len), so the first-revision header is unchanged */
        (has_kv_len && json_object_set_new(h, "kv_len", json_integer(a->kv_len))) ||
        /* the fifth revision's terms likewise (mask.chunk, mask.segments, mask.blocks) */
        (fifth && a->chunk != 0 && json_object_set_new(h, "chunk", json_integer(a->chunk))) ||
        xb_id_rows(h, segment_ids, block_ids, a->batch, lk)) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: out of memory");
        rc = ATTNCONF_ENOMEM;
    } else {
        /* The host allocated keep as a contiguous BOOL buffer of its shape (a must-reject
         * case's shape may be negative: then nothing fits). */
        int64_t numel = xr_numel(a->keep->ndim, a->keep->shape);
        size_t cap = numel > 0 ? (size_t)numel : 0;
        rc = xb_call(c, h, NULL, 0, "build_mask", "keep", a->keep, cap, &r);
    }
    json_decref(len);
    json_decref(lp);
    json_decref(h);
    json_decref(r);
    return rc;
}

/* ---- the KV cache (PROTOCOL.md "Cache operations") ------------------------------------------
 * A cache handle is the adapter's integer id + 1 (never NULL).  An adapter that restarted has
 * forgotten its caches: a later request naming one gets the adapter's error, and the case in
 * flight has already failed with the transport error. */

static void *xb_handle(json_int_t id)
{
    return (void *)(intptr_t)(id + 1);
}

static json_int_t xb_id(const void *h)
{
    return (json_int_t)((intptr_t)h - 1);
}

/* A request header {"protocol": 1, "op": op[, "cache": id]}; NULL when out of memory. */
static json_t *xb_cache_header(const char *op, const void *cache)
{
    json_t *h = json_object();
    if (!h || json_object_set_new(h, "protocol", json_integer(1)) ||
        json_object_set_new(h, "op", json_string(op)) ||
        (cache && json_object_set_new(h, "cache", json_integer(xb_id(cache))))) {
        json_decref(h);
        return NULL;
    }
    return h;
}

/* Send h (consumed) with payloads, read the reply (*reply, or NULL to drop it). */
static int xb_cache_call(xb_ctx *c, json_t *h, const xb_payload *pl, size_t npl, const char *op,
                         const char *want, attnconf_tensor *out, size_t cap, json_t **reply)
{
    json_t *r = NULL;
    int rc;
    if (!h) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: out of memory");
        rc = ATTNCONF_ENOMEM;
    } else if (!(rc = xb_ensure(c))) {
        rc = xb_call(c, h, pl, npl, op, want, out, cap, &r);
    }
    json_decref(h);
    if (reply && rc == 0)
        *reply = r;
    else
        json_decref(r);
    return rc;
}

/* The integer member `key` of a success reply, or a protocol failure. */
static int xb_reply_int(xb_ctx *c, json_t *r, const char *op, const char *key, json_int_t *v)
{
    char why[768];
    return xr_int(r, op, key, v, why, sizeof why) ? xb_garbage(c, "%s", why) : 0;
}

static int xb_cache_made(xb_ctx *c, json_t *h, const char *op, void **cache)
{
    json_t *r = NULL;
    json_int_t id = 0;
    int rc = xb_cache_call(c, h, NULL, 0, op, NULL, NULL, 0, &r);
    char why[768];
    if (!rc) {
        if (xr_cache_id(r, op, &id, why, sizeof why))
            rc = xb_garbage(c, "%s", why);
        else
            *cache = xb_handle(id);
    }
    json_decref(r);
    return rc;
}

static int xb_cache_create(void *ctx, const attnconf_cache_config *cfg, void **cache)
{
    xb_ctx *c = ctx;
    c->last_error[0] = '\0';
    if (!cfg || !cache || cfg->batch < 1 || cfg->batch > ACASE_MAX_BATCH) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: bad cache_create arguments");
        return ATTNCONF_EINVAL;
    }
    static const char *const kinds[] = {"",          "standard", "rotating",      "chunked",
                                        "quantized", "batch",    "batch_rotating"};
    size_t es;
    const char *dt = xr_dtype_name(cfg->dtype, &es);
    json_t *h = xb_cache_header("cache_create", NULL), *p = json_object();
    if (!h || !p || !dt || cfg->kind < 1 || cfg->kind > 6 ||
        json_object_set_new(p, "kind", json_string(kinds[cfg->kind])) ||
        json_object_set_new(p, "dtype", json_string(dt)) ||
        json_object_set_new(p, "batch", json_integer(cfg->batch)) ||
        json_object_set_new(p, "kv_heads", json_integer(cfg->kv_heads)) ||
        json_object_set_new(p, "head_dim", json_integer(cfg->head_dim)) ||
        json_object_set_new(p, "v_head_dim", json_integer(cfg->v_head_dim)) ||
        json_object_set_new(p, "max_size", json_integer(cfg->max_size)) ||
        json_object_set_new(p, "keep", json_integer(cfg->keep)) ||
        json_object_set_new(p, "chunk_size", json_integer(cfg->chunk_size)) ||
        json_object_set_new(p, "group_size", json_integer(cfg->group_size)) ||
        json_object_set_new(p, "bits", json_integer(cfg->bits)) ||
        json_object_set_new(p, "left_padding", xb_int_list(cfg->left_padding, cfg->batch)) ||
        json_object_set(h, "params", p)) {
        json_decref(p);
        json_decref(h);
        xb_fmt(c->last_error, sizeof c->last_error, "exec: cannot encode cache_create");
        return ATTNCONF_EINVAL;
    }
    json_decref(p);
    return xb_cache_made(c, h, "cache_create", cache);
}

static int xb_cache_update(void *ctx, void *cache, const attnconf_tensor *k,
                           const attnconf_tensor *v)
{
    xb_ctx *c = ctx;
    c->last_error[0] = '\0';
    json_t *h = xb_cache_header("cache_update", cache), *list = json_array();
    xb_payload pl[2];
    memset(pl, 0, sizeof pl);
    int rc = ATTNCONF_ENOMEM;
    if (h && list && !json_object_set(h, "tensors", list) &&
        !(rc = xb_add_tensor(c, list, "k", k, &pl[0])) &&
        !(rc = xb_add_tensor(c, list, "v", v, &pl[1]))) {
        rc = xb_cache_call(c, h, pl, 2, "cache_update", NULL, NULL, 0, NULL);
        h = NULL;
    }
    json_decref(h);
    json_decref(list);
    free(pl[0].owned);
    free(pl[1].owned);
    return rc;
}

static int xb_cache_trim(void *ctx, void *cache, int64_t n, int64_t *trimmed)
{
    xb_ctx *c = ctx;
    c->last_error[0] = '\0';
    json_t *h = xb_cache_header("cache_trim", cache), *r = NULL;
    if (h && json_object_set_new(h, "n", json_integer(n))) {
        json_decref(h);
        h = NULL;
    }
    json_int_t m = 0;
    int rc = xb_cache_call(c, h, NULL, 0, "cache_trim", NULL, NULL, 0, &r);
    if (!rc && !(rc = xb_reply_int(c, r, "cache_trim", "trimmed", &m)))
        *trimmed = m;
    json_decref(r);
    return rc;
}

static int xb_cache_make_mask(void *ctx, void *cache, const attnconf_cache_mask_args *a)
{
    xb_ctx *c = ctx;
    c->last_error[0] = '\0';
    json_t *h = xb_cache_header("cache_make_mask", cache);
    if (h && (json_object_set_new(h, "n", json_integer(a->n)) ||
              json_object_set_new(h, "window", json_integer(a->window)) ||
              json_object_set_new(h, "length", json_integer(a->keep->shape[3])))) {
        json_decref(h);
        h = NULL;
    }
    int64_t numel = xr_numel(a->keep->ndim, a->keep->shape);
    attnconf_tensor got = *a->keep;
    int rc = xb_cache_call(c, h, NULL, 0, "cache_make_mask", "keep", &got,
                           numel > 0 ? (size_t)numel : 0, NULL);
    if (rc)
        return rc;
    /* The host's keep is contiguous (B, 1, n, L): a reply of another shape or dtype is an
     * error of the call, not silently misread. */
    int same = got.dtype == ATTNCONF_BOOL && got.ndim == 4;
    for (int d = 0; same && d < 4; d++)
        same = got.shape[d] == a->keep->shape[d] &&
               (got.shape[d] <= 1 || got.strides[d] == a->keep->strides[d]);
    if (!same) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: cache_make_mask replied another "
               "shape, layout or dtype than the (B, 1, n, L) bool mask asked for");
        return ATTNCONF_EINVAL;
    }
    return 0;
}

/* One cache_state request: `tensor` NULL (sizes), "keys" or "values" into out. */
static int xb_state_part(xb_ctx *c, void *cache, const char *tensor, attnconf_tensor *out,
                         json_t **r)
{
    json_t *h = xb_cache_header("cache_state", cache);
    if (h && json_object_set_new(h, "tensor", tensor ? json_string(tensor) : json_null())) {
        json_decref(h);
        h = NULL;
    }
    int64_t numel = out ? xr_numel(out->ndim, out->shape) : 0;
    size_t es = 0;
    if (out)
        xr_dtype_name(out->dtype, &es);
    attnconf_tensor got;
    if (out)
        got = *out;
    int rc = xb_cache_call(c, h, NULL, 0, "cache_state", tensor, out ? &got : NULL,
                           numel > 0 ? (size_t)numel * es : 0, r);
    if (rc || !out)
        return rc;
    int same = got.dtype == out->dtype && got.ndim == 4;
    for (int d = 0; same && d < 4; d++) /* strides matter only where an element exists */
        same = got.shape[d] == out->shape[d] &&
               (numel == 0 || got.shape[d] <= 1 || got.strides[d] == out->strides[d]);
    if (!same) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: cache_state replied %s of another "
               "shape, layout or dtype than the state's",
               tensor);
        return ATTNCONF_EINVAL;
    }
    return 0;
}

static int xb_cache_state(void *ctx, void *cache, attnconf_cache_state *st)
{
    xb_ctx *c = ctx;
    c->last_error[0] = '\0';
    json_t *r = NULL;
    int64_t b = 0, l = 0;
    char why[768];
    int rc = xb_state_part(c, cache, st->keys ? "keys" : NULL, st->keys, &r);
    if (!rc && xr_state_sizes(r, ACASE_MAX_BATCH, ACASE_MAX_TENSOR_NUMEL, &b, &l, why, sizeof why))
        rc = xb_garbage(c, "%s", why);
    if (rc || !st->keys) {
        if (!rc) {
            st->batch = b;
            st->length = l;
        }
        json_decref(r);
        return rc;
    }
    if (b != st->batch || l != st->length) {
        json_decref(r);
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: the cache changed between two "
               "cache_state requests");
        return ATTNCONF_EINVAL;
    }
    int bad = xr_state_rows(r, b, l, st->offsets, st->positions, why, sizeof why);
    json_decref(r);
    if (bad)
        return xb_garbage(c, "%s", why);
    return xb_state_part(c, cache, "values", st->values, NULL);
}

static void xb_cache_destroy(void *ctx, void *cache)
{
    xb_ctx *c = ctx;
    if (!cache || c->proc.pid <= 0) /* an adapter that is not running holds no cache */
        return;
    xb_cache_call(c, xb_cache_header("cache_destroy", cache), NULL, 0, "cache_destroy", NULL, NULL,
                  0, NULL);
}

/* A request with one more member (consumed) and no reply data. */
static int xb_cache_simple(xb_ctx *c, const char *op, void *cache, const char *key, json_t *val)
{
    c->last_error[0] = '\0';
    json_t *h = xb_cache_header(op, cache);
    if (h && key && (!val || json_object_set_new(h, key, val))) {
        json_decref(h);
        h = NULL;
    } else if (!h) {
        json_decref(val);
    }
    return xb_cache_call(c, h, NULL, 0, op, NULL, NULL, 0, NULL);
}

static int xb_cache_filter(void *ctx, void *cache, const int64_t *rows, int64_t n)
{
    return xb_cache_simple(ctx, "cache_filter", cache, "rows", xb_int_list(rows, n));
}

static int xb_cache_extend(void *ctx, void *cache, const void *other)
{
    return xb_cache_simple(ctx, "cache_extend", cache, "other", json_integer(xb_id(other)));
}

static int xb_cache_merge(void *ctx, void *const *caches, int64_t n, void **out)
{
    xb_ctx *c = ctx;
    c->last_error[0] = '\0';
    json_t *h = xb_cache_header("cache_merge", NULL), *l = json_array();
    for (int64_t i = 0; l && i < n; i++)
        if (json_array_append_new(l, json_integer(xb_id(caches[i])))) {
            json_decref(l);
            l = NULL;
        }
    if (h && (!l || json_object_set_new(h, "caches", l))) {
        json_decref(h);
        h = NULL;
    }
    return xb_cache_made(c, h, "cache_merge", out);
}

static int xb_cache_prepare(void *ctx, void *cache, const attnconf_cache_prepare_args *a)
{
    xb_ctx *c = ctx;
    c->last_error[0] = '\0';
    /* B is the cache's: one size query. */
    attnconf_cache_state st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    int rc = xb_cache_state(ctx, cache, &st);
    if (rc)
        return rc;
    json_t *h = xb_cache_header("cache_prepare", cache);
    if (h && (json_object_set_new(h, "left_padding", xb_int_list(a->left_padding, st.batch)) ||
              json_object_set_new(h, "lengths", xb_int_list(a->lengths, st.batch)))) {
        json_decref(h);
        h = NULL;
    }
    return xb_cache_call(c, h, NULL, 0, "cache_prepare", NULL, NULL, 0, NULL);
}

static int xb_cache_finalize(void *ctx, void *cache)
{
    return xb_cache_simple(ctx, "cache_finalize", cache, NULL, NULL);
}

/* ---- paged KV attention (PROTOCOL.md "Paged KV caches"; ABI v1, sixth revision) ----------
 * The host owns the pool.  paged_sdpa sends it with q and the table; paged_append sends it with
 * the new tokens and receives the slots the library wrote, (page, slot) pairs with their K and V
 * rows, which are checked whole (in the pool, none twice, the pool's dtype and row shapes) before
 * the first byte lands in the host's pool: every slot not listed keeps its bytes, so the host's
 * own before/after comparison of the pool sees exactly what the library changed. */

/* `rows` rows of `width` int32 entries (none when width < 0) as JSON lists; NULL when out of
 * memory. */
static json_t *xb_table_rows(const int32_t *t, int64_t rows, int64_t width)
{
    json_t *a = json_array();
    for (int64_t b = 0; a && b < rows; b++) {
        json_t *row = json_array();
        for (int64_t j = 0; row && j < width; j++)
            if (json_array_append_new(row, json_integer(t[b * width + j]))) {
                json_decref(row);
                row = NULL;
            }
        if (!row || json_array_append_new(a, row)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* The members both paged requests share: "table_width", "block_table" (B rows), "seq_lens" and
 * the per-row list `name2` (query_lens / new_lens; null when lens2 is NULL).  B is the batch of
 * `lead` (q, or the new keys).  Returns 0 or a status with last_error set. */
static int xb_paged_members(xb_ctx *c, json_t *h, const attnconf_tensor *lead, const int32_t *table,
                            int64_t width, const int64_t *seq_lens, const char *name2,
                            const int64_t *lens2)
{
    if (!table || !seq_lens || lead->ndim < 1 || lead->shape[0] < 0 ||
        lead->shape[0] > ACASE_MAX_BATCH) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: a paged call needs a block table, seq_lens and a batch of 0..%d rows",
               ACASE_MAX_BATCH);
        return ATTNCONF_EINVAL;
    }
    const int64_t nb = lead->shape[0];
    /* A negative width is sent as it is (the adapter must refuse it), with empty rows. */
    const int64_t w = width > 0 ? width : 0;
    if (w > ACASE_MAX_TENSOR_NUMEL || (nb > 0 && w > ACASE_MAX_TENSOR_NUMEL / nb)) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: a block table of %lld rows of %lld entries is out of range", (long long)nb,
               (long long)width);
        return ATTNCONF_EINVAL;
    }
    json_t *rows = xb_table_rows(table, nb, w), *lens = xb_int_list(seq_lens, nb),
           *l2 = xb_int_list(lens2, nb);
    if (!rows || !lens || !l2 || json_object_set_new(h, "table_width", json_integer(width)) ||
        json_object_set(h, "block_table", rows) || json_object_set(h, "seq_lens", lens) ||
        json_object_set(h, name2, l2)) {
        json_decref(rows);
        json_decref(lens);
        json_decref(l2);
        xb_fmt(c->last_error, sizeof c->last_error, "exec: out of memory");
        return ATTNCONF_ENOMEM;
    }
    json_decref(rows);
    json_decref(lens);
    json_decref(l2);
    return 0;
}

/* A header {"protocol": 1, "op": op, "tensors": [...]} with the tensors ts[0..nt) described and
 * their payloads in pl.  On failure the caller frees what was made, as after a call. */
static int xb_paged_header(xb_ctx *c, const char *op, const char *const *names,
                           const attnconf_tensor *const *ts, size_t nt, json_t **h_out,
                           xb_payload *pl, size_t *npl)
{
    json_t *h = json_object(), *list = json_array();
    *h_out = h;
    *npl = 0;
    int rc = 0;
    if (!h || !list || json_object_set_new(h, "protocol", json_integer(1)) ||
        json_object_set_new(h, "op", json_string(op)) || json_object_set(h, "tensors", list)) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: out of memory");
        rc = ATTNCONF_ENOMEM;
    }
    for (size_t i = 0; !rc && i < nt; i++)
        if (!(rc = xb_add_tensor(c, list, names[i], ts[i], &pl[i])))
            (*npl)++;
    json_decref(list);
    return rc;
}

static int xb_paged_sdpa(void *ctx, const attnconf_paged_args *a)
{
    xb_ctx *c = ctx;
    c->last_error[0] = '\0';
    c->last_seconds = -1;
    if (!a ||
        a->struct_size < offsetof(attnconf_paged_args, out_capacity) + sizeof a->out_capacity ||
        !a->q || !a->k_pages || !a->v_pages || !a->out) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: paged_sdpa without q, k_pages, v_pages or out");
        return ATTNCONF_EINVAL;
    }
    static const char *const names[3] = {"q", "k_pages", "v_pages"};
    const attnconf_tensor *ts[3] = {a->q, a->k_pages, a->v_pages};
    xb_payload pl[3];
    size_t npl = 0;
    json_t *h = NULL, *r = NULL;
    int rc = xb_paged_header(c, "paged_sdpa", names, ts, 3, &h, pl, &npl);
    if (!rc)
        rc = xb_paged_members(c, h, a->q, a->block_table, a->table_width, a->seq_lens, "query_lens",
                              a->query_lens);
    /* The terms of clauses 20-22 only when set (the host sets each only for an adapter
     * listing its capability), as in sdpa; a must-reject value goes as the scale does. */
    const int64_t hq = a->q->ndim >= 2 ? a->q->shape[1] : -1;
    if (!rc && a->sinks && (hq < 0 || hq > ACASE_MAX_BATCH)) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: sinks need a q with a head dimension of at most %d", ACASE_MAX_BATCH);
        rc = ATTNCONF_EINVAL;
    }
    json_t *sinks = !rc && a->sinks ? xb_f32_list(a->sinks, hq) : NULL;
    if (!rc &&
        (json_object_set_new(h, "causal", json_boolean(a->causal != 0)) ||
         json_object_set_new(h, "window", json_integer(a->window)) ||
         json_object_set_new(h, "scale", !a->has_scale ? json_null() : jsonv_num(a->scale)) ||
         (a->softcap != 0 && json_object_set_new(h, "softcap", jsonv_num(a->softcap))) ||
         (a->alibi_max_bias != 0 &&
          json_object_set_new(h, "alibi_max_bias", jsonv_num(a->alibi_max_bias))) ||
         (a->sinks && (!sinks || json_object_set(h, "sinks", sinks))) ||
         (a->chunk != 0 && json_object_set_new(h, "chunk", json_integer(a->chunk))))) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: out of memory");
        rc = ATTNCONF_ENOMEM;
    }
    json_decref(sinks);
    if (!rc)
        rc = xb_ensure(c);
    if (!rc) {
        const double t0 = mono_now();
        rc = xb_call(c, h, pl, npl, "paged_sdpa", "out", a->out, a->out_capacity, &r);
        if (!rc)
            rc = xb_take_seconds(c, r, mono_now() - t0);
    }
    for (size_t i = 0; i < npl; i++)
        free(pl[i].owned);
    json_decref(h);
    json_decref(r);
    return rc;
}

/* The pool geometry of a paged_append's k_pages / v_pages, when both are rank 4 with the same
 * dtype, pages, kv heads and page size (else 0: a success reply cannot be applied). */
static int xb_pool_of(const attnconf_paged_append_args *a, xr_pool *p)
{
    const attnconf_tensor *k = a->k_pages, *v = a->v_pages;
    size_t es;
    if (k->ndim != 4 || v->ndim != 4 || k->dtype != v->dtype || !xr_dtype_name(k->dtype, &es) ||
        xr_numel(4, k->shape) < 0 || xr_numel(4, v->shape) < 0)
        return 0;
    for (int d = 0; d < 3; d++)
        if (k->shape[d] != v->shape[d])
            return 0;
    *p = (xr_pool){k->shape[0], k->shape[2], k->shape[1], k->shape[3], v->shape[3], k->dtype};
    return p->num_pages * p->page_size <= ACASE_MAX_TENSOR_NUMEL;
}

/* Write row i of the reply tensor `rows` (m, Hkv, Dh) into slot `slot` of page `page` of pool. */
static void xb_put_slot(attnconf_tensor *pool, const attnconf_tensor *rows, int64_t i, int64_t page,
                        int64_t slot, size_t es)
{
    for (int64_t hh = 0; hh < pool->shape[1]; hh++)
        for (int64_t d = 0; d < pool->shape[3]; d++) {
            const int64_t to = page * pool->strides[0] + hh * pool->strides[1] +
                               slot * pool->strides[2] + d * pool->strides[3];
            const int64_t from =
                i * rows->strides[0] + hh * rows->strides[1] + d * rows->strides[2];
            memcpy((unsigned char *)pool->data + (size_t)to * es,
                   (const unsigned char *)rows->data + (size_t)from * es, es);
        }
}

static int xb_paged_append(void *ctx, const attnconf_paged_append_args *a)
{
    xb_ctx *c = ctx;
    c->last_error[0] = '\0';
    if (!a ||
        a->struct_size < offsetof(attnconf_paged_append_args, new_lens) + sizeof a->new_lens ||
        !a->k || !a->v || !a->k_pages || !a->v_pages) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: paged_append without k, v, k_pages or v_pages");
        return ATTNCONF_EINVAL;
    }
    static const char *const names[4] = {"k", "v", "k_pages", "v_pages"};
    const attnconf_tensor *ts[4] = {a->k, a->v, a->k_pages, a->v_pages};
    xb_payload pl[4];
    size_t npl = 0;
    json_t *h = NULL, *r = NULL;
    xr_pool pool = {0, 0, 0, 0, 0, 0};
    const int poolok = xb_pool_of(a, &pool);
    const int64_t slots = poolok ? pool.num_pages * pool.page_size : 0;
    size_t es = 0;
    xr_dtype_name(pool.dtype, &es);
    /* Room for every slot of the pool: the most an exact reply can write. */
    const size_t kcap = (size_t)(slots * pool.kv_heads * pool.head_dim) * es,
                 vcap = (size_t)(slots * pool.kv_heads * pool.v_head_dim) * es;
    attnconf_tensor kt, vt;
    memset(&kt, 0, sizeof kt);
    memset(&vt, 0, sizeof vt);
    kt.data = malloc(kcap ? kcap : 1);
    vt.data = malloc(vcap ? vcap : 1);
    int64_t *pairs = malloc(sizeof *pairs * (size_t)(2 * slots + 2));
    unsigned char *seen = malloc((size_t)slots + 1);
    int rc = 0;
    if (!kt.data || !vt.data || !pairs || !seen) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: out of memory for the pool's writes");
        rc = ATTNCONF_ENOMEM;
    }
    if (!rc)
        rc = xb_paged_header(c, "paged_append", names, ts, 4, &h, pl, &npl);
    if (!rc)
        rc = xb_paged_members(c, h, a->k, a->block_table, a->table_width, a->seq_lens, "new_lens",
                              a->new_lens);
    if (!rc)
        rc = xb_ensure(c);
    if (!rc) {
        const xb_want want[2] = {{"k_slots", &kt, kcap}, {"v_slots", &vt, vcap}};
        rc = xb_call_n(c, h, pl, npl, "paged_append", want, 2, &r);
    }
    if (!rc && !poolok) {
        xb_fmt(c->last_error, sizeof c->last_error,
               "exec: the adapter accepted k_pages and v_pages that are not one pool (rank 4, "
               "one dtype, the same pages, kv heads and page size): its writes cannot be "
               "applied");
        rc = ATTNCONF_EBACKEND;
    }
    int64_t m = 0;
    if (!rc) {
        xr_desc d[2];
        memset(d, 0, sizeof d);
        const attnconf_tensor *got[2] = {&kt, &vt};
        for (int t = 0; t < 2; t++) {
            d[t].dtype = got[t]->dtype;
            d[t].ndim = got[t]->ndim;
            memcpy(d[t].shape, got[t]->shape, sizeof d[t].shape);
            memcpy(d[t].strides, got[t]->strides, sizeof d[t].strides);
        }
        char why[768];
        if (xr_paged_writes(r, &pool, d, pairs, seen, &m, why, sizeof why))
            rc = xb_garbage(c, "%s", why);
    }
    for (int64_t i = 0; !rc && i < m; i++) {
        xb_put_slot(a->k_pages, &kt, i, pairs[2 * i], pairs[2 * i + 1], es);
        xb_put_slot(a->v_pages, &vt, i, pairs[2 * i], pairs[2 * i + 1], es);
    }
    for (size_t i = 0; i < npl; i++)
        free(pl[i].owned);
    json_decref(h);
    json_decref(r);
    free(kt.data);
    free(vt.data);
    free(pairs);
    free(seen);
    return rc;
}

static void xb_free(xb_ctx *c)
{
    xb_stop(c);
    xb_close_fd(&c->err_fd);
    for (size_t i = 0; c->opts && i < c->nopts; i++) {
        free((char *)c->opts[i].key);
        free((char *)c->opts[i].value);
    }
    free(c->opts);
    xb_free_info(c);
    free(c->version);
    free(c->cmd);
    free(c->rbuf);
    if (c->log_owned)
        close(c->log_fd);
    free(c->log_path);
    free(c);
}

/* End the running adapter, polite first (PROTOCOL.md "close"), then SIGKILL to its process
 * group after the grace period; reaped either way. */
static void xb_quit(xb_ctx *c)
{
    if (c->proc.pid > 0) {
        double grace = c->timeout_s < XB_CLOSE_GRACE_S ? c->timeout_s : XB_CLOSE_GRACE_S;
        static const char msg[] = "{\"protocol\":1,\"op\":\"close\"}\n";
        xb_write_all(c, msg, sizeof msg - 1, mono_now() + grace);
        xb_close_fd(&c->proc.in_fd);
        proc_wait_exit(c->proc.pid, mono_now() + XB_CLOSE_GRACE_S, NULL);
    }
    xb_stop(c);
}

void xb_restart(void *ctx)
{
    xb_ctx *c = ctx;
    if (c && c->proc.pid > 0 && c->served > 0)
        xb_quit(c);
}

static void xb_close(void *ctx)
{
    xb_ctx *c = ctx;
    if (!c)
        return;
    xb_quit(c);
    xb_free(c);
}

static const attnconf_backend xb_template = {
    .abi_version = ATTNCONF_ABI_VERSION,
    .struct_size = sizeof(attnconf_backend),
    .name = "exec",
    .version = "",
    .open = xb_open_plain,
    .close = xb_close,
    .capabilities = xb_caps,
    .sdpa = xb_sdpa,
    .build_mask = xb_build_mask,
    .last_error = xb_last_error,
    .options = NULL,
    .open_with_options = xb_open_with_options,
    .cache_create = xb_cache_create,
    .cache_update = xb_cache_update,
    .cache_trim = xb_cache_trim,
    .cache_make_mask = xb_cache_make_mask,
    .cache_state = xb_cache_state,
    .cache_destroy = xb_cache_destroy,
    .cache_filter = xb_cache_filter,
    .cache_extend = xb_cache_extend,
    .cache_merge = xb_cache_merge,
    .cache_prepare = xb_cache_prepare,
    .cache_finalize = xb_cache_finalize,
    .paged_append = xb_paged_append,
    .paged_sdpa = xb_paged_sdpa,
};

int xb_open(const char *cmdline, const attnconf_option *options, size_t n_options, double timeout_s,
            const char *stderr_to, const attnconf_backend **table, void **ctx, char *err,
            size_t errlen)
{
    *table = NULL;
    *ctx = NULL;
    if (!cmdline || !cmdline[strspn(cmdline, " \t")]) {
        xb_fmt(err, errlen, "empty command line after 'exec:'");
        return -1;
    }
    if (!(timeout_s > 0) || !isfinite(timeout_s)) {
        xb_fmt(err, errlen, "timeout %g is not a positive number of seconds", timeout_s);
        return -1;
    }
    /* A write to an adapter that died must come back as EPIPE, not kill the harness. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);

    xb_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        xb_fmt(err, errlen, "out of memory");
        return -1;
    }
    c->proc = (proc_child)PROC_CHILD_NONE;
    c->err_fd = -1;
    c->log_fd = -1;
    c->timeout_s = timeout_s;
    c->last_seconds = -1;
    c->cmd = strdup(cmdline);
    c->rbuf = malloc(XB_RBUF_SIZE);
    c->opts = n_options ? calloc(n_options, sizeof *c->opts) : NULL;
    int oom = !c->cmd || !c->rbuf || (n_options && !c->opts);
    for (size_t i = 0; !oom && i < n_options; i++) {
        c->opts[i].key = strdup(options[i].key);
        c->opts[i].value = strdup(options[i].value ? options[i].value : "");
        c->nopts = i + 1;
        oom = !c->opts[i].key || !c->opts[i].value;
    }
    if (oom) {
        xb_free(c);
        xb_fmt(err, errlen, "out of memory");
        return -1;
    }
    if (stderr_to) {
        int dash = strcmp(stderr_to, "-") == 0;
        c->log_path = strdup(stderr_to);
        c->log_fd =
            dash ? STDERR_FILENO
                 : open(stderr_to, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0666);
        c->log_owned = !dash && c->log_fd >= 0;
        if (c->log_fd < 0 || !c->log_path) {
            xb_fmt(err, errlen, "--adapter-stderr %s: %s", stderr_to,
                   c->log_path ? strerror(errno) : "out of memory");
            xb_free(c);
            return -1;
        }
    }
    int rc = xb_hello(c, 1);
    if (rc != 0) {
        xb_fmt(err, errlen, "%s", c->last_error);
        xb_free(c);
        return -1;
    }
    c->table = xb_template;
    c->table.name = c->name;
    c->table.version = c->version;
    c->table.options = c->oinfo;
    *table = &c->table;
    *ctx = c;
    return 0;
}

/* ---- repro (PROTOCOL.md "repro"): a reproducer of one case ----------------------------------
 * The request is the sdpa request of a (the same members, xb_sdpa_params and xb_add_tensor)
 * with op "repro" and the members of `extra`; the reply carries no tensors. */
int xb_repro(void *ctx, const attnconf_sdpa_args *a, json_t *extra, char **script, char *language,
             size_t language_len)
{
    xb_ctx *c = ctx;
    *script = NULL;
    c->last_error[0] = '\0';
    if (!a || !a->q || !a->k || !a->v || !json_is_object(extra)) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: repro without q, k, v or members");
        return ATTNCONF_EINVAL;
    }
    json_t *r = NULL;
    double call_s;
    int rc = xb_sdpa_exchange(c, a, "repro", extra, NULL, 0, &r, &call_s);
    if (rc)
        goto done;
    json_t *s = json_object_get(r, "script"), *l = json_object_get(r, "language");
    const char *lang = json_is_string(l) ? json_string_value(l) : "";
    if (!json_is_string(s) || (strcmp(lang, "python") != 0 && strcmp(lang, "c") != 0)) {
        rc = xb_garbage(c, "a repro reply needs a \"script\" string and a \"language\" of "
                           "\"python\" or \"c\"");
        goto done;
    }
    *script = strdup(json_string_value(s));
    if (!*script) {
        xb_fmt(c->last_error, sizeof c->last_error, "exec: out of memory for the script");
        rc = ATTNCONF_ENOMEM;
        goto done;
    }
    xb_fmt(language, language_len, "%s", lang);
done:
    json_decref(r);
    return rc;
}
