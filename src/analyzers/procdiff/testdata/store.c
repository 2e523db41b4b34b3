/* A small record store, the program the function-level comparison tests build in versions.
 *
 * -DCHANGED changes the body of `checksum` (one constant and one operation).
 * -DADDED adds `export_csv`, a function nothing calls.
 * -DRENAMED renames `trim_right` to `strip_trailing` without touching its body.
 * `checksum` is `noipa` so that changing its body cannot change how its callers are compiled;
 * every other function is left to the optimizer. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef RENAMED
#define TRIM strip_trailing
#else
#define TRIM trim_right
#endif

#define BUCKETS 64
#define KEY_MAX 32

struct record {
    char key[KEY_MAX];
    long value;
    int hits;
    struct record *next;
};

struct store {
    struct record *buckets[BUCKETS];
    int count;
    long total;
};

enum command { CMD_SET, CMD_GET, CMD_DEL, CMD_SUM, CMD_LIST, CMD_QUIT, CMD_BAD };

unsigned hash_key(const char *key) {
    unsigned h = 2166136261u;
    while (*key) {
        h ^= (unsigned char)*key++;
        h *= 16777619u;
    }
    return h;
}

__attribute__((noipa)) unsigned checksum(const unsigned char *data, size_t len) {
    unsigned a = 1, b = 0;
    for (size_t i = 0; i < len; i++) {
#ifdef CHANGED
        a = (a + data[i] * 3u) % 65519u;
        b = (b ^ a) % 65519u;
#else
        a = (a + data[i]) % 65521u;
        b = (b + a) % 65521u;
#endif
    }
    return (b << 16) | a;
}

void TRIM(char *text) {
    size_t n = strlen(text);
    while (n > 0 && isspace((unsigned char)text[n - 1]))
        text[--n] = '\0';
}

char *skip_space(char *text) {
    while (*text && isspace((unsigned char)*text))
        text++;
    return text;
}

int parse_long(const char *text, long *out) {
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

enum command classify(const char *word) {
    static const char *names[] = {"set", "get", "del", "sum", "list", "quit"};
    for (int i = 0; i < 6; i++)
        if (strcmp(word, names[i]) == 0)
            return (enum command)i;
    return CMD_BAD;
}

struct store *store_new(void) {
    struct store *s = calloc(1, sizeof *s);
    if (!s) {
        fputs("\nout of memory\n", stderr);
        exit(2);
    }
    return s;
}

struct record *store_find(struct store *s, const char *key) {
    struct record *r = s->buckets[hash_key(key) % BUCKETS];
    while (r && strcmp(r->key, key) != 0)
        r = r->next;
    return r;
}

int store_set(struct store *s, const char *key, long value) {
    if (strlen(key) >= KEY_MAX)
        return -1;
    struct record *r = store_find(s, key);
    if (r) {
        s->total += value - r->value;
        r->value = value;
        return 1;
    }
    r = malloc(sizeof *r);
    if (!r)
        return -2;
    strcpy(r->key, key);
    r->value = value;
    r->hits = 0;
    unsigned b = hash_key(key) % BUCKETS;
    r->next = s->buckets[b];
    s->buckets[b] = r;
    s->count++;
    s->total += value;
    return 0;
}

int store_get(struct store *s, const char *key, long *out) {
    struct record *r = store_find(s, key);
    if (!r)
        return -1;
    r->hits++;
    *out = r->value;
    return 0;
}

int store_del(struct store *s, const char *key) {
    struct record **link = &s->buckets[hash_key(key) % BUCKETS];
    while (*link) {
        struct record *r = *link;
        if (strcmp(r->key, key) == 0) {
            *link = r->next;
            s->total -= r->value;
            s->count--;
            free(r);
            return 0;
        }
        link = &r->next;
    }
    return -1;
}

static int by_value(const void *a, const void *b) {
    const struct record *x = *(const struct record *const *)a;
    const struct record *y = *(const struct record *const *)b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return strcmp(x->key, y->key);
}

struct record **store_sorted(struct store *s) {
    struct record **all = malloc(sizeof *all * (size_t)(s->count + 1));
    if (!all)
        return NULL;
    int n = 0;
    for (int b = 0; b < BUCKETS; b++)
        for (struct record *r = s->buckets[b]; r; r = r->next)
            all[n++] = r;
    qsort(all, (size_t)n, sizeof *all, by_value);
    all[n] = NULL;
    return all;
}

void store_list(struct store *s, FILE *out) {
    struct record **all = store_sorted(s);
    if (!all)
        return;
    for (struct record **r = all; *r; r++)
        fprintf(out, "%-16s %8ld %4d\n", (*r)->key, (*r)->value, (*r)->hits);
    free(all);
}

long store_sum(const struct store *s) {
    long sum = 0;
    for (int b = 0; b < BUCKETS; b++)
        for (const struct record *r = s->buckets[b]; r; r = r->next)
            sum += r->value;
    return sum;
}

unsigned store_digest(const struct store *s) {
    unsigned d = 0;
    for (int b = 0; b < BUCKETS; b++)
        for (const struct record *r = s->buckets[b]; r; r = r->next)
            d ^= checksum((const unsigned char *)r->key, strlen(r->key)) + (unsigned)r->value;
    return d;
}

void store_free(struct store *s) {
    for (int b = 0; b < BUCKETS; b++) {
        struct record *r = s->buckets[b];
        while (r) {
            struct record *next = r->next;
            free(r);
            r = next;
        }
    }
    free(s);
}

const char *describe(int status) {
    switch (status) {
    case 0: return "created";
    case 1: return "updated";
    case -1: return "key too long";
    case -2: return "out of memory";
    case 3: return "deleted";
    case 4: return "missing";
    case 5: return "bad number";
    default: return "unknown status";
    }
}

int run_line(struct store *s, char *line, FILE *out) {
    TRIM(line);
    char *word = skip_space(line);
    char *rest = word;
    while (*rest && !isspace((unsigned char)*rest))
        rest++;
    if (*rest)
        *rest++ = '\0';
    rest = skip_space(rest);
    char *arg = rest;
    while (*arg && !isspace((unsigned char)*arg))
        arg++;
    if (*arg)
        *arg++ = '\0';
    arg = skip_space(arg);
    long value;
    switch (classify(word)) {
    case CMD_SET:
        if (parse_long(arg, &value) != 0) {
            fprintf(out, "%s: %s\n", rest, describe(5));
            return 1;
        }
        fprintf(out, "%s: %s\n", rest, describe(store_set(s, rest, value)));
        return 1;
    case CMD_GET:
        if (store_get(s, rest, &value) == 0)
            fprintf(out, "%s = %ld\n", rest, value);
        else
            fprintf(out, "%s: %s\n", rest, describe(4));
        return 1;
    case CMD_DEL:
        fprintf(out, "%s: %s\n", rest, describe(store_del(s, rest) == 0 ? 3 : 4));
        return 1;
    case CMD_SUM:
        fprintf(out, "sum %ld (%d records, total %ld, digest %08x)\n", store_sum(s), s->count,
                s->total, store_digest(s));
        return 1;
    case CMD_LIST:
        store_list(s, out);
        return 1;
    case CMD_QUIT:
        return 0;
    default:
        fprintf(out, "\tunknown command: %s\n", word);
        return 1;
    }
}

#ifdef ADDED
void export_csv(struct store *s, FILE *out) {
    fputs("key,value,hits\n", out);
    for (int b = 0; b < BUCKETS; b++)
        for (struct record *r = s->buckets[b]; r; r = r->next)
            fprintf(out, "\"%s\",%ld,%d\n", r->key, r->value, r->hits);
}
#endif

int main(int argc, char **argv) {
    FILE *in = argc > 1 ? fopen(argv[1], "r") : stdin;
    if (!in) {
        perror(argv[1]);
        return 1;
    }
    struct store *s = store_new();
    char line[256];
    while (fgets(line, sizeof line, in))
        if (!run_line(s, line, stdout))
            break;
    store_free(s);
    if (in != stdin)
        fclose(in);
    return 0;
}
