/* Matching method tables with their descriptors, and the protobuf-c face of a service, happen
 * here. */
#include "services/registry.h"

#include <string.h>

int wl__service_table_bind(const wl_service_table_t *table, const wl_method_t **by_index,
                           wl_error_t *err)
{
    const ProtobufCServiceDescriptor *descriptor = table->descriptor;
    for (unsigned m = 0; m < descriptor->n_methods; m++)
        by_index[m] = NULL;
    for (size_t i = 0; i < table->method_count; i++) {
        const wl_method_t *row = &table->methods[i];
        const ProtobufCMethodDescriptor *method =
            row->name != NULL
                ? protobuf_c_service_descriptor_get_method_by_name(descriptor, row->name)
                : NULL;
        if (method == NULL)
            return wl_error_set(err, WL_EINTERNAL,
                                "%s: the method table's row %zu (%s) names no method of the "
                                "service (%u methods, %zu rows)",
                                descriptor->name, i, row->name ? row->name : "no name",
                                descriptor->n_methods, table->method_count);
        size_t m = (size_t)(method - descriptor->methods);
        if (by_index[m] != NULL)
            return wl_error_set(err, WL_EINTERNAL,
                                "%s: the method table has two rows for %s (%u methods, %zu rows)",
                                descriptor->name, row->name, descriptor->n_methods,
                                table->method_count);
        if (row->run == NULL)
            return wl_error_set(err, WL_EINTERNAL,
                                "%s: the method table's row for %s has no function",
                                descriptor->name, row->name);
        by_index[m] = row;
    }
    for (unsigned m = 0; m < descriptor->n_methods; m++) {
        if (by_index[m] == NULL)
            return wl_error_set(err, WL_EINTERNAL,
                                "%s: method %s has no row in the method table, so no policy "
                                "(%u methods, %zu rows)",
                                descriptor->name, descriptor->methods[m].name,
                                descriptor->n_methods, table->method_count);
    }
    return 0;
}

const wl_method_t *wl__service_table_find(const wl_service_table_t *table, const char *name)
{
    for (size_t i = 0; i < table->method_count; i++) {
        if (strcmp(table->methods[i].name, name) == 0)
            return &table->methods[i];
    }
    return NULL;
}
