/* fuzz_config_entry.c - config.json text (see fuzz_entry.h). */
#include "fuzz_entry.h"

#include <stdlib.h>
#include <string.h>

#include "hc_model_config.h"

static int check_error(hc_status st, const hc_error *err, const char *what, char *why)
{
    if (st == HC_OK) return 0;
    if (err->status != st || err->msg[0] == '\0')
        return hc_fuzz_fail(why, "%s: error %d without a message", what, (int)st);
    return 0;
}

static int format_ok(hc_format_id f) { return hc_format_get(f) != NULL; }

int hc_fuzz_config(const uint8_t *data, size_t size, char *why)
{
    char *text = hc_fuzz_cstr(data, size);
    if (text == NULL) return 0;
    int rc = 0;
    hc_error err;
    hc_error_clear(&err);
    hc_model_info info;
    hc_status st = hc_model_info_parse(text, "config.json", &info, &err);
    rc = check_error(st, &err, "hc_model_info_parse", why);
    if (rc == 0 && st == HC_OK) {
        if (info.param_format != HC_FMT_F16 && info.param_format != HC_FMT_BF16)
            rc = hc_fuzz_fail(why, "model info: param format %d", (int)info.param_format);
        else if (memchr(info.model_type, '\0', sizeof info.model_type) == NULL ||
                 memchr(info.quant_method, '\0', sizeof info.quant_method) == NULL)
            rc = hc_fuzz_fail(why, "model info: unterminated string");
    }
    hc_error_clear(&err);
    hc_humming_qconfig q;
    st = hc_humming_qconfig_parse(text, "config.json", &q, &err);
    if (rc == 0) rc = check_error(st, &err, "hc_humming_qconfig_parse", why);
    if (rc == 0 && st == HC_OK) {
        if (!format_ok(q.weight_format) || hc_format_get(q.weight_format)->bits > 8)
            rc = hc_fuzz_fail(why, "qconfig: weight format %d", (int)q.weight_format);
        else if (!format_ok(q.scale_format) || !format_ok(q.param_format))
            rc = hc_fuzz_fail(why, "qconfig: scale/param format out of the table");
        else if (q.group_size < 0 || q.group_size > (1 << 20) || q.group_size_n < 0 ||
                 q.group_size_n > (1 << 20))
            rc = hc_fuzz_fail(why, "qconfig: group size %lld x %lld accepted",
                              (long long)q.group_size_n, (long long)q.group_size);
    }
    free(text);
    return rc;
}
