/* hc_gpu_detect.c - compute capability of the local GPU through the driver API,
 * loaded with dlopen so that the tool runs where no driver exists. */
#include "hc_gpu_detect.h"

#include <dlfcn.h>
#include <stddef.h>

typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_device_get_fn)(int *, int);
typedef int (*cu_attr_fn)(int *, int, int);

enum { CU_ATTR_CC_MAJOR = 75, CU_ATTR_CC_MINOR = 76 };

int hc_gpu_detect_sm(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) return 0;
    cu_init_fn init = (cu_init_fn)dlsym(lib, "cuInit");
    cu_device_get_fn get = (cu_device_get_fn)dlsym(lib, "cuDeviceGet");
    cu_attr_fn attr = (cu_attr_fn)dlsym(lib, "cuDeviceGetAttribute");
    int dev = 0, major = 0, minor = 0, sm = 0;
    if (init && get && attr && init(0) == 0 && get(&dev, 0) == 0 &&
        attr(&major, CU_ATTR_CC_MAJOR, dev) == 0 && attr(&minor, CU_ATTR_CC_MINOR, dev) == 0)
        sm = 10 * major + minor;
    dlclose(lib);
    return sm;
}
