/* hc_gpu_detect.h - find the local GPU's compute capability without linking CUDA. */
#ifndef HC_GPU_DETECT_H
#define HC_GPU_DETECT_H

/* Returns the compute capability of device 0 as 10*major+minor (e.g. 90), or 0
 * when no driver or GPU is present. Loads libcuda at run time. */
int hc_gpu_detect_sm(void);

#endif
