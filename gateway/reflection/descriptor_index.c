/* Finding which file of a descriptor set declares a name happens here. */
#include "reflection/descriptor_index.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "google/protobuf/descriptor.pb-c.h"
#include "walklist/arena.h"

typedef struct {
    const char *name; /* fully-qualified, no leading dot */
    size_t file;
} symbol_t;

typedef struct {
    const char *extendee; /* fully-qualified, no leading dot */
    int32_t number;
    size_t file;
} extension_t;

typedef struct {
    const char *name;
    uint8_t *bytes;
    size_t len;
    size_t *imports;
    size_t import_count;
} file_t;

struct wl_descriptor_index {
    wl_arena_t arena; /* everything below */
    file_t *files;
    size_t file_count;
    symbol_t *symbols; /* sorted by name */
    size_t symbol_count, symbol_capacity;
    extension_t *extensions;
    size_t extension_count, extension_capacity;
    const char **services;
    size_t service_count, service_capacity;
    wl_error_t *err; /* while building: its first failure (sticky), checked once at the end */
};

/* Grows an array of the index's arena to hold one more item; false when out of memory. The old
 * array stays in the arena until the index goes: the arrays are small and built once. */
static bool make_room(wl_descriptor_index_t *index, void **items, size_t count, size_t *capacity,
                      size_t item_size)
{
    if (count < *capacity)
        return true;
    size_t grown = *capacity ? *capacity * 2 : 64;
    void *bigger = wl_arena_alloc(&index->arena, grown * item_size);
    if (bigger == NULL) {
        wl_error_set(index->err, WL_ENOMEM, NULL);
        return false;
    }
    if (count > 0)
        memcpy(bigger, *items, count * item_size);
    *items = bigger;
    *capacity = grown;
    return true;
}

/* Declares scope.name in file; its full name (the scope of what it holds), NULL on failure. */
static const char *declare(wl_descriptor_index_t *index, const char *scope, const char *name,
                           size_t file)
{
    if (index->err->code != 0)
        return NULL;
    if (name == NULL) {
        wl_error_set(index->err, WL_EINVAL, "a declaration in \"%s\" has no name", scope);
        return NULL;
    }
    if (!make_room(index, (void **)&index->symbols, index->symbol_count, &index->symbol_capacity,
                   sizeof(symbol_t)))
        return NULL;
    const char *full = scope[0] != '\0' ? wl_arena_printf(&index->arena, "%s.%s", scope, name)
                                        : wl_arena_strdup(&index->arena, name);
    if (full == NULL) {
        wl_error_set(index->err, WL_ENOMEM, NULL);
        return NULL;
    }
    index->symbols[index->symbol_count++] = (symbol_t){full, file};
    return full;
}

static void declare_extension(wl_descriptor_index_t *index, const char *scope,
                              const Google__Protobuf__FieldDescriptorProto *field, size_t file)
{
    const char *extendee = field->extendee;
    if (declare(index, scope, field->name, file) == NULL)
        return;
    if (extendee == NULL) {
        wl_error_set(index->err, WL_EINVAL, "extension %s.%s extends nothing", scope, field->name);
        return;
    }
    if (!make_room(index, (void **)&index->extensions, index->extension_count,
                   &index->extension_capacity, sizeof(extension_t)))
        return;
    /* protoc writes type names fully-qualified with a leading dot (".walklist.v1.Item"). */
    if (extendee[0] == '.')
        extendee++;
    const char *copy = wl_arena_strdup(&index->arena, extendee);
    if (copy == NULL) {
        wl_error_set(index->err, WL_ENOMEM, NULL);
        return;
    }
    index->extensions[index->extension_count++] = (extension_t){copy, field->number, file};
}

/* An enum and its values: the values are the enum's siblings, as in C++ (protobuf's scoping). */
static void declare_enum(wl_descriptor_index_t *index, const char *scope,
                         const Google__Protobuf__EnumDescriptorProto *type, size_t file)
{
    declare(index, scope, type->name, file);
    for (size_t i = 0; i < type->n_value; i++)
        declare(index, scope, type->value[i]->name, file);
}

/* The types and extensions a scope holds: a file's (its package) or a message's. */
typedef struct {
    Google__Protobuf__DescriptorProto **messages;
    size_t message_count;
    Google__Protobuf__EnumDescriptorProto **enums;
    size_t enum_count;
    Google__Protobuf__FieldDescriptorProto **extensions;
    size_t extension_count;
} members_t;

static void declare_members(wl_descriptor_index_t *index, const char *scope,
                            const members_t *members, size_t file);

static void declare_message(wl_descriptor_index_t *index, const char *scope,
                            const Google__Protobuf__DescriptorProto *type, size_t file)
{
    const char *full = declare(index, scope, type->name, file);
    if (full == NULL)
        return;
    for (size_t i = 0; i < type->n_field; i++)
        declare(index, full, type->field[i]->name, file);
    for (size_t i = 0; i < type->n_oneof_decl; i++)
        declare(index, full, type->oneof_decl[i]->name, file);
    members_t members = {type->nested_type, type->n_nested_type, type->enum_type,
                         type->n_enum_type, type->extension,     type->n_extension};
    declare_members(index, full, &members, file);
}

static void declare_members(wl_descriptor_index_t *index, const char *scope,
                            const members_t *members, size_t file)
{
    for (size_t i = 0; i < members->message_count; i++)
        declare_message(index, scope, members->messages[i], file);
    for (size_t i = 0; i < members->enum_count; i++)
        declare_enum(index, scope, members->enums[i], file);
    for (size_t i = 0; i < members->extension_count; i++)
        declare_extension(index, scope, members->extensions[i], file);
}

static void declare_service(wl_descriptor_index_t *index, const char *scope,
                            const Google__Protobuf__ServiceDescriptorProto *service, size_t file)
{
    const char *full = declare(index, scope, service->name, file);
    if (full == NULL || !make_room(index, (void **)&index->services, index->service_count,
                                   &index->service_capacity, sizeof(const char *)))
        return;
    index->services[index->service_count++] = full;
    for (size_t i = 0; i < service->n_method; i++)
        declare(index, full, service->method[i]->name, file);
}

static void declare_file(wl_descriptor_index_t *index,
                         const Google__Protobuf__FileDescriptorProto *proto, size_t file)
{
    const char *package = proto->package ? proto->package : "";
    members_t members = {proto->message_type, proto->n_message_type, proto->enum_type,
                         proto->n_enum_type,  proto->extension,      proto->n_extension};
    declare_members(index, package, &members, file);
    for (size_t i = 0; i < proto->n_service; i++)
        declare_service(index, package, proto->service[i], file);
}

/* A file's own bytes, as protoc wrote them: protobuf-c packs what it unpacked field for field,
 * unknown fields included. */
static void keep_file(wl_descriptor_index_t *index,
                      const Google__Protobuf__FileDescriptorProto *proto, file_t *file)
{
    if (proto->name == NULL) {
        wl_error_set(index->err, WL_EINVAL, "a file has no name");
        return;
    }
    file->name = wl_arena_strdup(&index->arena, proto->name);
    file->len = google__protobuf__file_descriptor_proto__get_packed_size(proto);
    file->bytes = wl_arena_alloc(&index->arena, file->len ? file->len : 1);
    if (file->name == NULL || file->bytes == NULL) {
        wl_error_set(index->err, WL_ENOMEM, NULL);
        return;
    }
    google__protobuf__file_descriptor_proto__pack(proto, file->bytes);
}

static int resolve_imports(wl_descriptor_index_t *index,
                           const Google__Protobuf__FileDescriptorSet *set, wl_error_t *err)
{
    for (size_t i = 0; i < index->file_count; i++) {
        const Google__Protobuf__FileDescriptorProto *proto = set->file[i];
        file_t *file = &index->files[i];
        file->import_count = proto->n_dependency;
        file->imports = wl_arena_alloc(&index->arena, (proto->n_dependency + 1) * sizeof(size_t));
        if (file->imports == NULL)
            return wl_error_set(err, WL_ENOMEM, NULL);
        for (size_t d = 0; d < proto->n_dependency; d++) {
            file->imports[d] =
                wl_descriptor_index_find_file(index, wl_span_str(proto->dependency[d]));
            if (file->imports[d] == WL_DESCRIPTOR_NONE)
                return wl_error_set(err, WL_EINVAL, "%s imports %s, which the set lacks",
                                    file->name, proto->dependency[d]);
        }
    }
    return 0;
}

static int compare_symbols(const void *a, const void *b)
{
    return strcmp(((const symbol_t *)a)->name, ((const symbol_t *)b)->name);
}

/* Orders a name (a span, not NUL-terminated) against a symbol's as strcmp orders names. */
static int compare_name(wl_span_t name, const char *symbol)
{
    size_t symbol_len = strlen(symbol);
    if (name.len == 0)
        return symbol_len == 0 ? 0 : -1;
    int order = memcmp(name.base, symbol, name.len < symbol_len ? name.len : symbol_len);
    if (order != 0)
        return order;
    return name.len < symbol_len ? -1 : name.len > symbol_len ? 1 : 0;
}

int wl_descriptor_index_create(const uint8_t *set_bytes, size_t len, wl_descriptor_index_t **out,
                               wl_error_t *err)
{
    *out = NULL;
    wl_descriptor_index_t *index = calloc(1, sizeof(*index));
    if (index == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    wl_arena_init(&index->arena, 0);
    /* The unpacked set is scratch: only names, numbers and the files' bytes are kept. */
    wl_arena_t scratch;
    wl_arena_init(&scratch, 0);
    int rc = 0;
    Google__Protobuf__FileDescriptorSet *set =
        google__protobuf__file_descriptor_set__unpack(&scratch.allocator, len, set_bytes);
    if (set == NULL) {
        rc = wl_error_set(err, WL_EINVAL, "not a FileDescriptorSet");
        goto Exit;
    }
    index->file_count = set->n_file;
    index->files = wl_arena_alloc(&index->arena, (set->n_file + 1) * sizeof(file_t));
    if (index->files == NULL) {
        rc = wl_error_set(err, WL_ENOMEM, NULL);
        goto Exit;
    }
    index->err = err;
    for (size_t i = 0; i < set->n_file && err->code == 0; i++) {
        keep_file(index, set->file[i], &index->files[i]);
        declare_file(index, set->file[i], i);
    }
    index->err = NULL;
    rc = err->code;
    if (rc != 0)
        goto Exit;
    rc = resolve_imports(index, set, err);
    if (rc != 0)
        goto Exit;
    if (index->symbol_count > 0)
        qsort(index->symbols, index->symbol_count, sizeof(symbol_t), compare_symbols);
    for (size_t i = 1; i < index->symbol_count; i++) {
        if (strcmp(index->symbols[i - 1].name, index->symbols[i].name) == 0) {
            rc = wl_error_set(err, WL_EINVAL, "%s is declared twice", index->symbols[i].name);
            goto Exit;
        }
    }
    *out = index;
    index = NULL;
Exit:
    wl_arena_dispose(&scratch);
    wl_descriptor_index_destroy(index);
    return rc;
}

void wl_descriptor_index_destroy(wl_descriptor_index_t *index)
{
    if (index == NULL)
        return;
    wl_arena_dispose(&index->arena);
    free(index);
}

size_t wl_descriptor_index_file_count(const wl_descriptor_index_t *index)
{
    return index->file_count;
}

const char *wl_descriptor_index_file_name(const wl_descriptor_index_t *index, size_t file)
{
    return index->files[file].name;
}

wl_span_t wl_descriptor_index_file_bytes(const wl_descriptor_index_t *index, size_t file)
{
    return wl_span((const char *)index->files[file].bytes, index->files[file].len);
}

size_t wl_descriptor_index_imports(const wl_descriptor_index_t *index, size_t file,
                                   const size_t **imports)
{
    *imports = index->files[file].imports;
    return index->files[file].import_count;
}

size_t wl_descriptor_index_find_file(const wl_descriptor_index_t *index, wl_span_t name)
{
    for (size_t i = 0; i < index->file_count; i++) {
        if (index->files[i].name != NULL && compare_name(name, index->files[i].name) == 0)
            return i;
    }
    return WL_DESCRIPTOR_NONE;
}

size_t wl_descriptor_index_find_symbol(const wl_descriptor_index_t *index, wl_span_t symbol)
{
    size_t low = 0, high = index->symbol_count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        int order = compare_name(symbol, index->symbols[middle].name);
        if (order == 0)
            return index->symbols[middle].file;
        if (order < 0)
            high = middle;
        else
            low = middle + 1;
    }
    return WL_DESCRIPTOR_NONE;
}

size_t wl_descriptor_index_find_extension(const wl_descriptor_index_t *index, wl_span_t message,
                                          int32_t number)
{
    for (size_t i = 0; i < index->extension_count; i++) {
        const extension_t *extension = &index->extensions[i];
        if (extension->number == number && compare_name(message, extension->extendee) == 0)
            return extension->file;
    }
    return WL_DESCRIPTOR_NONE;
}

size_t wl_descriptor_index_extension_numbers(const wl_descriptor_index_t *index, wl_span_t message,
                                             int32_t *numbers, size_t max)
{
    size_t count = 0;
    for (size_t i = 0; i < index->extension_count; i++) {
        if (compare_name(message, index->extensions[i].extendee) != 0)
            continue;
        if (count < max)
            numbers[count] = index->extensions[i].number;
        count++;
    }
    return count;
}

size_t wl_descriptor_index_services(const wl_descriptor_index_t *index,
                                    const char *const **services)
{
    *services = index->services;
    return index->service_count;
}

int wl_descriptor_index_idempotency(const wl_descriptor_index_t *index, const char *service,
                                    const char *method)
{
    size_t file = wl_descriptor_index_find_symbol(index, wl_span_str(service));
    if (file == WL_DESCRIPTOR_NONE)
        return -1;
    wl_arena_t scratch;
    wl_arena_init(&scratch, 0);
    int level = -1;
    Google__Protobuf__FileDescriptorProto *proto = google__protobuf__file_descriptor_proto__unpack(
        &scratch.allocator, index->files[file].len, index->files[file].bytes);
    const char *package = proto != NULL && proto->package != NULL ? proto->package : "";
    size_t package_len = strlen(package);
    /* The service's own name follows its package and a dot (none without a package). */
    const char *name = service;
    if (package_len > 0 && strncmp(service, package, package_len) == 0 &&
        service[package_len] == '.')
        name = service + package_len + 1;
    for (size_t s = 0; proto != NULL && s < proto->n_service && level < 0; s++) {
        const Google__Protobuf__ServiceDescriptorProto *declared = proto->service[s];
        if (declared->name == NULL || strcmp(declared->name, name) != 0)
            continue;
        for (size_t m = 0; m < declared->n_method && level < 0; m++) {
            const Google__Protobuf__MethodDescriptorProto *candidate = declared->method[m];
            if (candidate->name == NULL || strcmp(candidate->name, method) != 0)
                continue;
            const Google__Protobuf__MethodOptions *options = candidate->options;
            level = options != NULL && options->has_idempotency_level
                        ? (int)options->idempotency_level
                        : 0;
        }
    }
    wl_arena_dispose(&scratch);
    return level;
}
