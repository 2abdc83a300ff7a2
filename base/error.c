#include "base/error.h"

#include <stdio.h>
#include <string.h>

const char *bg_strerror(int code)
{
	switch (code) {
	case BG_OK: return "success";
	case BG_EUSAGE: return "usage error";
	case BG_ECONFIG: return "configuration error";
	case BG_ECONNECT: return "connection failed";
	case BG_EHOSTKEY: return "host key verification failed";
	case BG_EAUTH: return "authentication failed";
	case BG_ETIMEOUT: return "timed out";
	case BG_EIO: return "I/O error";
	case BG_EREMOTE: return "remote operation failed";
	case BG_EVERIFY: return "verification failed";
	case BG_EPROTO: return "protocol error";
	case BG_EBUSY: return "busy";
	case BG_EINVALID: return "invalid result";
	case BG_ENOTFOUND: return "not found";
	case BG_EUNSUPPORTED: return "not supported";
	}
	return "unknown error";
}

int bg_fail(bg_err *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->code = code;
		err->detail = BG_DETAIL_NONE;
	}
	return code;
}

void bg_err_prefix(bg_err *err, const char *prefix)
{
	char tmp[sizeof(err->msg)];
	if (!err || !prefix)
		return;
	snprintf(tmp, sizeof(tmp), "%s: %s", prefix, err->msg);
	memcpy(err->msg, tmp, sizeof(tmp));
}
