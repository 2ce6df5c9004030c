/* SPDX-License-Identifier: MIT */
/*
 * resp.c - the Redis protocol: requests in, replies out.
 *
 * REQUESTS
 *   A request starting with '*' is a RESP array of bulk strings; anything
 *   else is an inline command, one line split into words with Redis's
 *   quoting rules ("..." with \n \r \t \b \a \xHH escapes, '...' with \').
 *   The parser is Redis 7.0's (networking.c), byte for byte, because a
 *   client that works against Redis must see the same thing here:
 *     - a header line ends at its CR, and the byte after the CR is skipped
 *       unread, as Redis does; a NUL byte before the CR hides the line
 *       (Redis searches with strchr());
 *     - lengths are strict decimals (string_to_ll(): no sign but '-', no
 *       leading zero, no blank, no overflow);
 *     - an array length above INT_MAX, a bulk length below 0 or above
 *       proto-max-bulk-len, a header or inline line longer than 64 KiB
 *       without its end, unbalanced quotes, or a byte other than '$' where
 *       a bulk header belongs is a protocol error: the reply is
 *       "-ERR Protocol error: ..." with Redis's text, and the connection is
 *       closed after it.  Nothing after the error is ever run, so a framing
 *       error cannot turn the rest of a request into commands.
 *   One difference, on purpose: Redis skips the two bytes after a bulk's
 *   data without looking at them; here they must be CR LF, or the request
 *   is refused as a protocol error ("expected CRLF after bulk").  A client
 *   whose lengths are wrong is out of step with its own framing, and
 *   running the misframed bytes as commands is how injection starts.
 *
 *   Parsing is incremental: a request that arrives in pieces is resumed
 *   where it stopped (array length, bulks read, the next bulk's length),
 *   never re-parsed from its start, so a million-argument request costs
 *   linear time however it is split.  Arguments are offsets into the input
 *   buffer until the request is complete, so the buffer may grow (move)
 *   meanwhile.
 *
 * REPLIES
 *   Replies are appended to the client's output buffer in RESP2, as Redis
 *   writes them to a client that has not sent HELLO 3.  Error texts that
 *   contain client bytes go through out_errorf(), which turns CR and LF
 *   into spaces (Redis's addReplyErrorFormat() does the same), so a key
 *   cannot forge a reply.
 */
#define _GNU_SOURCE /* strnlen */
#include "cache.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------- output */

bool out_reserve(struct client *c, size_t more)
{
    if (c->out_off > 0 && c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    if (more > SIZE_MAX / 2 - c->out_len)
        return false;
    if (c->out_len + more <= c->out_cap)
        return true;
    if (c->out_off > 0) { /* compact before growing */
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
        if (c->out_len + more <= c->out_cap)
            return true;
    }
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + more)
        cap *= 2;
    char *p = realloc(c->out, cap);
    if (p == NULL)
        return false;
    c->out = p;
    c->out_cap = cap;
    return true;
}

void out_add(struct client *c, const void *data, size_t len)
{
    if (!out_reserve(c, len)) {
        c->closing = true; /* cannot reply: drop the client */
        c->out_len = c->out_off = 0;
        return;
    }
    if (len > 0)
        memcpy(c->out + c->out_len, data, len);
    c->out_len += len;
}

void out_str(struct client *c, const char *s)
{
    out_add(c, s, strlen(s));
}

void out_fmt(struct client *c, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        out_add(c, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

void out_int(struct client *c, long long v)
{
    char buf[32];
    buf[0] = ':';
    size_t n = 1 + ll_to_string(buf + 1, v);
    buf[n++] = '\r';
    buf[n++] = '\n';
    out_add(c, buf, n);
}

void out_array(struct client *c, long long n)
{
    out_fmt(c, "*%lld\r\n", n);
}

void out_bulk(struct client *c, const void *data, size_t len)
{
    char buf[32];
    buf[0] = '$';
    size_t n = 1 + ll_to_string(buf + 1, (long long)len);
    buf[n++] = '\r';
    buf[n++] = '\n';
    if (!out_reserve(c, n + len + 2)) {
        c->closing = true; /* cannot reply: drop the client */
        c->out_len = c->out_off = 0;
        return;
    }
    memcpy(c->out + c->out_len, buf, n);
    if (len > 0)
        memcpy(c->out + c->out_len + n, data, len);
    memcpy(c->out + c->out_len + n + len, "\r\n", 2);
    c->out_len += n + len + 2;
}

void out_bulk_str(struct client *c, const char *s)
{
    out_bulk(c, s, strlen(s));
}

void out_null(struct client *c)
{
    out_add(c, "$-1\r\n", 5);
}

void out_ok(struct client *c)
{
    out_add(c, "+OK\r\n", 5);
}

void out_error(struct client *c, const char *msg)
{
    out_add(c, "-", 1);
    out_str(c, msg);
    out_add(c, "\r\n", 2);
}

void out_errorf(struct client *c, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    /* Redis builds the text with sdscatvprintf(), which stops at a NUL a
     * %c or %.*s put in it; then it blanks CR and LF. */
    size_t len = strlen(buf);
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\r' || buf[i] == '\n')
            buf[i] = ' ';
    out_add(c, "-", 1);
    out_add(c, buf, len);
    out_add(c, "\r\n", 2);
}

/* ------------------------------------------------------------ strings */

/* Redis's string2ll(): the only integers Redis accepts as arguments. */
bool string_to_ll(const char *s, size_t len, long long *out)
{
    size_t i = 0;
    bool negative = false;
    unsigned long long v;

    if (len == 0 || len >= 21)
        return false;
    if (len == 1 && s[0] == '0') {
        *out = 0;
        return true;
    }
    if (s[0] == '-') {
        negative = true;
        if (++i == len)
            return false;
    }
    if (s[i] < '1' || s[i] > '9')
        return false;
    v = (unsigned long long)(s[i++] - '0');
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > ULLONG_MAX / 10 || v * 10 > ULLONG_MAX - d)
            return false;
        v = v * 10 + d;
    }
    if (i < len)
        return false;
    if (negative) {
        if (v > (unsigned long long)LLONG_MAX + 1)
            return false;
        *out =
            v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
    } else {
        if (v > (unsigned long long)LLONG_MAX)
            return false;
        *out = (long long)v;
    }
    return true;
}

size_t ll_to_string(char *buf, long long v)
{
    char tmp[24];
    size_t n = 0, len = 0;
    unsigned long long u =
        v < 0 ? (unsigned long long)(-(v + 1)) + 1 : (unsigned long long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        buf[len++] = '-';
    while (n > 0)
        buf[len++] = tmp[--n];
    buf[len] = '\0';
    return len;
}

bool opt_is(const struct arg *a, const char *word)
{
    size_t n = strlen(word);
    size_t len = strnlen(a->p, a->len);
    return len == n && strncasecmp(a->p, word, n) == 0;
}

static int fold(int ch, bool nocase)
{
    return nocase ? tolower(ch) : ch;
}

/*
 * Glob matching with Redis's rules (util.c stringmatchlen): * ? [abc]
 * [^a-z] and \ escapes.  `skip` cuts the exponential cases: once a '*'
 * has failed against every suffix, a longer match cannot succeed either.
 */
static bool glob_impl(const char *p, size_t pl, const char *s, size_t sl,
                      bool nocase, bool *skip, int nesting)
{
    if (nesting > 1000) /* Redis's limit on nested '*' recursion */
        return false;
    while (pl > 0 && sl > 0) {
        switch (p[0]) {
        case '*':
            while (pl > 1 && p[1] == '*')
                p++, pl--;
            if (pl == 1)
                return true;
            while (sl > 0) {
                if (glob_impl(p + 1, pl - 1, s, sl, nocase, skip, nesting + 1))
                    return true;
                if (*skip)
                    return false;
                s++, sl--;
            }
            *skip = true;
            return false;
        case '?':
            s++, sl--;
            break;
        case '[': {
            p++, pl--;
            bool negate = pl > 0 && p[0] == '^', match = false;
            if (negate)
                p++, pl--;
            for (;;) {
                if (pl == 0) {
                    p--, pl++;
                    break;
                } else if (p[0] == '\\' && pl >= 2) {
                    p++, pl--;
                    if (p[0] == s[0])
                        match = true;
                } else if (p[0] == ']') {
                    break;
                } else if (pl >= 3 && p[1] == '-') {
                    int lo = p[0], hi = p[2], ch = s[0];
                    if (lo > hi) {
                        int t = lo;
                        lo = hi;
                        hi = t;
                    }
                    lo = fold(lo, nocase), hi = fold(hi, nocase);
                    ch = fold(ch, nocase);
                    p += 2, pl -= 2;
                    if (ch >= lo && ch <= hi)
                        match = true;
                } else if (fold(p[0], nocase) == fold(s[0], nocase)) {
                    match = true;
                }
                p++, pl--;
            }
            if (negate)
                match = !match;
            if (!match)
                return false;
            s++, sl--;
            break;
        }
        case '\\':
            if (pl >= 2)
                p++, pl--;
            /* fall through */
        default:
            if (fold(p[0], nocase) != fold(s[0], nocase))
                return false;
            s++, sl--;
            break;
        }
        p++, pl--;
        if (sl == 0) {
            while (pl > 0 && p[0] == '*')
                p++, pl--;
            break;
        }
    }
    return pl == 0 && sl == 0;
}

bool glob_match(const char *pat, size_t plen, const char *s, size_t slen,
                bool nocase)
{
    bool skip = false;
    return glob_impl(pat, plen, s, slen, nocase, &skip, 0);
}

/* ------------------------------------------------------------ parsing */

/* Where `ch` is in buf[from, to), or -1; a NUL byte first also gives -1
 * (Redis searches its NUL-terminated buffer with strchr()). */
static long find_byte(const char *buf, size_t from, size_t to, char ch)
{
    const char *hit = memchr(buf + from, ch, to - from);
    if (hit == NULL)
        return -1;
    if (memchr(buf + from, '\0', (size_t)(hit - (buf + from))) != NULL)
        return -1;
    return hit - buf;
}

static bool argv_push(struct client *c, size_t off, size_t len)
{
    if (c->argc == c->argv_cap) {
        size_t cap = c->argv_cap ? c->argv_cap * 2 : 8;
        struct arg *p = realloc(c->argv, cap * sizeof *p);
        if (p == NULL)
            return false;
        c->argv = p;
        c->argv_cap = cap;
    }
    c->argv[c->argc++] = (struct arg){NULL, len, off};
    return true;
}

static enum parse protocol_error(struct client *c, const char *what)
{
    out_errorf(c, "ERR Protocol error: %s", what);
    c->closing = true;
    return PARSE_ERROR;
}

static bool is_hex(int ch)
{
    return isxdigit(ch) != 0;
}

static int hex_value(int ch)
{
    return isdigit(ch) ? ch - '0' : tolower(ch) - 'a' + 10;
}

/* Redis's sdssplitargs() over line[0, len) (no NUL inside): words into
 * c->inline_buf and c->argv.  False on unbalanced quotes. */
static bool split_inline(struct client *c, const char *line, size_t len)
{
    const char *p = line, *end = line + len;
    free(c->inline_buf);
    c->inline_buf = malloc(len + 1);
    if (c->inline_buf == NULL)
        return false;
    char *w = c->inline_buf;
#define AT(q) ((q) < end ? *(q) : '\0')
    for (;;) {
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (p == end)
            return true;
        char *start = w;
        bool inq = false, insq = false, done = false;
        while (!done) {
            char ch = AT(p);
            if (inq) {
                if (ch == '\\' && AT(p + 1) == 'x' && is_hex(AT(p + 2)) &&
                    is_hex(AT(p + 3))) {
                    *w++ = (char)(hex_value(AT(p + 2)) * 16 +
                                  hex_value(AT(p + 3)));
                    p += 3;
                } else if (ch == '\\' && AT(p + 1) != '\0') {
                    p++;
                    switch (*p) {
                    case 'n':
                        *w++ = '\n';
                        break;
                    case 'r':
                        *w++ = '\r';
                        break;
                    case 't':
                        *w++ = '\t';
                        break;
                    case 'b':
                        *w++ = '\b';
                        break;
                    case 'a':
                        *w++ = '\a';
                        break;
                    default:
                        *w++ = *p;
                        break;
                    }
                } else if (ch == '"') {
                    /* A closing quote must end the word. */
                    if (AT(p + 1) != '\0' && !isspace((unsigned char)p[1]))
                        return false;
                    done = true;
                } else if (ch == '\0') {
                    return false;
                } else {
                    *w++ = ch;
                }
            } else if (insq) {
                if (ch == '\\' && AT(p + 1) == '\'') {
                    p++;
                    *w++ = '\'';
                } else if (ch == '\'') {
                    if (AT(p + 1) != '\0' && !isspace((unsigned char)p[1]))
                        return false;
                    done = true;
                } else if (ch == '\0') {
                    return false;
                } else {
                    *w++ = ch;
                }
            } else {
                switch (ch) {
                case ' ':
                case '\n':
                case '\r':
                case '\t':
                case '\0':
                    done = true;
                    break;
                case '"':
                    inq = true;
                    break;
                case '\'':
                    insq = true;
                    break;
                default:
                    *w++ = ch;
                    break;
                }
            }
            if (p < end)
                p++;
        }
        if (!argv_push(c, 0, (size_t)(w - start)))
            return false;
        c->argv[c->argc - 1].p = start;
    }
#undef AT
}

static enum parse parse_inline(struct client *c)
{
    long nl = find_byte(c->in, c->qpos, c->in_len, '\n');
    if (nl < 0) {
        if (c->in_len - c->qpos > INLINE_MAX_SIZE)
            return protocol_error(c, "too big inline request");
        return PARSE_MORE;
    }
    size_t end = (size_t)nl;
    if (end > c->qpos && c->in[end - 1] == '\r')
        end--;
    c->argc = 0;
    if (!split_inline(c, c->in + c->qpos, end - c->qpos)) {
        if (c->inline_buf == NULL) {
            c->closing = true; /* out of memory */
            return PARSE_ERROR;
        }
        return protocol_error(c, "unbalanced quotes in request");
    }
    c->ppos = (size_t)nl + 1;
    return PARSE_DONE;
}

enum parse parse_request(struct client *c)
{
    const char *in = c->in;
    long long ll;

    if (c->qpos >= c->in_len)
        return PARSE_MORE;
    if (c->mb_left == 0 && c->argc == 0 && c->ppos == c->qpos) {
        c->inline_req = in[c->qpos] != '*';
        c->bulk_len = -1;
    }
    if (c->inline_req)
        return parse_inline(c);

    if (c->mb_left == 0) { /* the array header */
        long cr = find_byte(in, c->qpos, c->in_len, '\r');
        if (cr < 0) {
            if (c->in_len - c->qpos > INLINE_MAX_SIZE)
                return protocol_error(c, "too big mbulk count string");
            return PARSE_MORE;
        }
        if ((size_t)cr + 2 > c->in_len)
            return PARSE_MORE;
        if (!string_to_ll(in + c->qpos + 1, (size_t)cr - c->qpos - 1, &ll) ||
            ll > INT_MAX)
            return protocol_error(c, "invalid multibulk length");
        if (ll > UNAUTH_MAX_ARGS && !c->authenticated)
            return protocol_error(c, "unauthenticated multibulk length");
        c->ppos = (size_t)cr + 2;
        if (ll <= 0) /* an empty request: nothing to run */
            return PARSE_DONE;
        c->mb_left = ll;
        c->argc = 0;
    }
    while (c->mb_left > 0) {
        if (c->bulk_len < 0) {
            long cr = find_byte(in, c->ppos, c->in_len, '\r');
            if (cr < 0) {
                if (c->in_len - c->ppos > INLINE_MAX_SIZE)
                    return protocol_error(c, "too big bulk count string");
                return PARSE_MORE;
            }
            if ((size_t)cr + 2 > c->in_len)
                return PARSE_MORE;
            if (in[c->ppos] != '$') {
                char what[32];
                snprintf(what, sizeof what, "expected '$', got '%c'",
                         in[c->ppos]);
                return protocol_error(c, what);
            }
            if (!string_to_ll(in + c->ppos + 1, (size_t)cr - c->ppos - 1,
                              &ll) ||
                ll < 0 || (unsigned long long)ll > S.proto_max_bulk_len)
                return protocol_error(c, "invalid bulk length");
            if (ll > UNAUTH_MAX_BULK && !c->authenticated)
                return protocol_error(c, "unauthenticated bulk length");
            c->ppos = (size_t)cr + 2;
            c->bulk_len = ll;
        }
        size_t want = (size_t)c->bulk_len + 2;
        if (c->in_len - c->ppos < want) {
            c->need = c->ppos + want;
            return PARSE_MORE;
        }
        if (in[c->ppos + want - 2] != '\r' || in[c->ppos + want - 1] != '\n')
            return protocol_error(c, "expected CRLF after bulk");
        if (!argv_push(c, c->ppos - c->qpos, (size_t)c->bulk_len)) {
            c->closing = true; /* out of memory */
            return PARSE_ERROR;
        }
        c->ppos += want;
        c->bulk_len = -1;
        c->mb_left--;
    }
    for (size_t i = 0; i < c->argc; i++)
        c->argv[i].p = c->in + c->qpos + c->argv[i].off;
    return PARSE_DONE;
}

void request_done(struct client *c)
{
    c->qpos = c->ppos;
    c->argc = 0;
    c->mb_left = 0;
    c->bulk_len = -1;
    c->inline_req = false;
    if (c->inline_buf != NULL) {
        free(c->inline_buf);
        c->inline_buf = NULL;
    }
}
