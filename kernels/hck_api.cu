/* hck_api.cu - the C API of libhc_kernels.so (hc_kernels.h): the layer's
 * tensors on the device, host-memory GEMM and activation quantization, and
 * the timing of the dense GEMM. */
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "hck_internal.cuh"

#define CK(call)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            if (msg) snprintf(msg, msglen, "%s: %s", #call, cudaGetErrorString(e_));          \
            goto fail;                                                                        \
        }                                                                                     \
    } while (0)

namespace {

template <typename T>
cudaError_t upload(const void *src, size_t bytes, const T **dst)
{
    *dst = nullptr;
    if (src == nullptr || bytes == 0) return cudaSuccess;
    void *d = nullptr;
    cudaError_t e = cudaMalloc(&d, bytes);
    if (e != cudaSuccess) return e;
    *dst = (const T *)d;
    return cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice);
}

__global__ void random_kernel(uint16_t *x, int64_t n, int bf16, uint32_t seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 0x2c1b3c6du;
        h ^= h >> 12;
        x[i] = hck::f2h(((float)(h & 0xffffff) / 16777216.0f) * 2.0f - 1.0f, bf16);
    }
}

/* Reads n 16-byte words of p through L2, leaving it full of clean lines; the
 * store that keeps the loads never runs. */
__global__ void read_flush_kernel(const uint4 *p, size_t n)
{
    uint32_t acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = __ldcg(p + i);
        acc |= v.x | v.y | v.z | v.w;
    }
    if (acc == 0x9e3779b9u) ((uint4 *)p)[0].x = acc;
}

/* Device buffers of one GEMM call. */
struct Bufs {
    uint16_t *x = nullptr, *y = nullptr;
    float *codes = nullptr, *scales = nullptr;
    int64_t *off = nullptr;
    float *ws = nullptr;
    ~Bufs()
    {
        cudaFree(x), cudaFree(y), cudaFree(codes), cudaFree(scales), cudaFree(off), cudaFree(ws);
    }
    cudaError_t alloc(const hck_layer *L, int64_t rows)
    {
        const hck_desc &d = L->d;
        cudaError_t e;
        if (hck::w4a16_takes(d)) {
            const size_t wb = std::max(hck::w4a16_ws_bytes(L, rows), hck::small16_ws_bytes(L, rows));
            if ((e = cudaMalloc((void **)&ws, wb)) != cudaSuccess || (e = cudaMemset(ws, 0, wb)) != cudaSuccess)
                return e;
        }
        if (hck::wg8_takes(d, L->sm) || hck::wg8pk_takes(d, L->sm)) {
            const size_t wb = std::max(hck::wg8pk_takes(d, L->sm) ? hck::wg8pk_ws_bytes(L, rows)
                                                                  : hck::fp8_wgmma_ws_bytes(L, rows),
                                       hck::small16_ws_bytes(L, rows));
            if ((e = cudaMalloc((void **)&ws, wb)) != cudaSuccess || (e = cudaMemset(ws, 0, wb)) != cudaSuccess)
                return e;
        } else if (hck::a8_takes(d) && (e = cudaMalloc((void **)&ws, hck::a8_ws_bytes(L, rows))) != cudaSuccess)
            return e;
        /* float codes (rows, K), or fp16 codes (rows, Kp) for the a8 family (code bytes for wg8) */
        const size_t cb = std::max((size_t)rows * d.K * 4, (size_t)rows * d.Kp * 2);
        if ((e = cudaMalloc((void **)&x, (size_t)rows * d.K * 2 + 2)) != cudaSuccess) return e;
        if ((e = cudaMalloc((void **)&y, (size_t)rows * d.N * 2 + 2)) != cudaSuccess) return e;
        if ((e = cudaMalloc((void **)&codes, cb + 16)) != cudaSuccess) return e;
        if ((e = cudaMalloc((void **)&scales, (size_t)rows * 4 + 4)) != cudaSuccess) return e;
        return cudaMalloc((void **)&off, (size_t)(d.E + 1) * 8);
    }
};

/* The launches of one GEMM: a wgmma family (sm90) or an mma.sync family
 * where one takes the layer, else activation quantization and the
 * verification GEMM. */
cudaError_t run(const hck_layer *L, Bufs &b, int64_t rows, int64_t max_rows, cudaStream_t st)
{
    const hck_desc &d = L->d;
    if (hck::small16_takes(d, L->sm, max_rows))
        return hck::launch_small16(L, b.x, b.off, rows, max_rows, b.y, b.ws, st);
    if (hck::wg16_takes(*L, max_rows)) return hck::launch_wg16(L, b.x, b.off, rows, max_rows, b.y, b.ws, st);
    if (hck::w4a16_takes(d)) return hck::launch_w4a16(L, b.x, b.off, rows, max_rows, b.y, b.ws, st);
    if (hck::small8_takes(d, L->sm, max_rows))
        return hck::launch_small8(L, b.x, b.off, rows, max_rows, b.y, (uint8_t *)b.codes, b.scales, b.ws, st);
    if (hck::wg8pk_takes(d, L->sm))
        return hck::launch_wg8pk(L, b.x, b.off, rows, max_rows, b.y, (uint8_t *)b.codes, b.scales, b.ws, st);
    if (hck::wg8_takes(d, L->sm))
        return hck::launch_wg8(L, b.x, b.off, rows, max_rows, b.y, (uint8_t *)b.codes, b.scales, b.ws, st);
    if (hck::a8_takes(d))
        return hck::launch_a8(L, b.x, b.off, rows, max_rows, b.y, (uint16_t *)b.codes, b.scales, b.ws, st);
    cudaError_t e = hck::launch_act(d.act_quant, d.out_bf16, b.x, rows, d.K, b.codes, b.scales, st);
    if (e != cudaSuccess) return e;
    return hck::launch_gemm(L, b.codes, d.act_quant == HCK_A_NONE ? nullptr : b.scales, b.off, max_rows, b.y, st);
}

}  // namespace

extern "C" int hck_abi_version(void) { return HCK_ABI_VERSION; }

extern "C" int hck_device_sm(char *msg, size_t msglen)
{
    int n = 0, major = 0, minor = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        if (msg) snprintf(msg, msglen, "no GPU: %s", e != cudaSuccess ? cudaGetErrorString(e) : "no device");
        return 0;
    }
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    if (major < 8) {
        if (msg) snprintf(msg, msglen, "GPU sm%d%d: the kernels need sm80 or newer", major, minor);
        return 0;
    }
    return 10 * major + minor;
}

extern "C" void hck_layer_destroy(hck_layer *L)
{
    if (L == nullptr) return;
    cudaFree((void *)L->p.w), cudaFree((void *)L->p.s), cudaFree((void *)L->p.z);
    cudaFree((void *)L->p.gl), cudaFree((void *)L->p.bias);
    delete L;
}

extern "C" int hck_layer_create(const hck_desc *d, hck_layer **out, char *msg, size_t msglen)
{
    *out = nullptr;
    if ((d->abits != 16 && d->abits != 8 && d->abits != 4) || d->wbits < 1 || d->wbits > 8 ||
        d->Np % 64 || d->Kp % HCK_BLOCK_K || (d->layout == HCK_L_PACKED_K && d->abits != 8)) {
        if (msg) snprintf(msg, msglen, "unsupported layer: a%d b%d layout %d Np %lld Kp %lld", d->abits,
                          d->wbits, d->layout, (long long)d->Np, (long long)d->Kp);
        return -1;
    }
    hck_layer *L = new hck_layer();
    memset(&L->p, 0, sizeof L->p);
    L->tmap_encode = nullptr;
    L->d = *d;
    L->sm = hck_device_sm(nullptr, 0);
    CK(cudaDeviceGetAttribute(&L->sms, cudaDevAttrMultiProcessorCount, 0));
    CK(hck::w4a16_init());
    CK(hck::a8_init());
    if (L->sm == 90) CK(hck::wg8_init());
    if (L->sm == 90) CK(hck::wg8pk_init());
    if (L->sm == 90) {
        /* from the driver through the runtime: nothing links libcuda; without
         * it the 16-bit wgmma family does not take launches */
        cudaDriverEntryPointQueryResult q;
        CK(hck::wg16_init());
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &L->tmap_encode, 12000, cudaEnableDefault,
                                             &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess) {
            L->tmap_encode = nullptr;
            (void)cudaGetLastError(); /* not an error of this layer */
        }
    }
    if (L->sm == 90) CK(hck::small16_init());
    CK(upload(d->weight, d->weight_bytes, &L->p.w));
    CK(upload(d->scale, d->scale_bytes, &L->p.s));
    CK(upload(d->zero, d->zero_bytes, &L->p.z));
    CK(upload(d->global, d->global_bytes, &L->p.gl));
    CK(upload(d->bias, d->bias_bytes, &L->p.bias));
    *out = L;
    return 0;
fail:
    hck_layer_destroy(L);
    return -1;
}

extern "C" int hck_gemm_host(hck_layer *L, const uint16_t *x, int64_t rows, const int64_t *offsets,
                             uint16_t *y, char *msg, size_t msglen)
{
    const hck_desc &d = L->d;
    std::vector<int64_t> off(d.E + 1, rows);
    off[0] = 0;
    if (offsets) off.assign(offsets, offsets + d.E + 1);
    int64_t max_rows = 0;
    for (int e = 0; e < d.E; e++) max_rows = std::max(max_rows, off[e + 1] - off[e]);
    const size_t xb = (size_t)rows * d.K * 2, yb = (size_t)rows * d.N * 2;
    Bufs b;
    CK(b.alloc(L, rows));
    CK(cudaMemcpy(b.x, x, xb, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b.off, off.data(), off.size() * 8, cudaMemcpyHostToDevice));
    CK(cudaMemset(b.y, 0xff, yb)); /* poison: all-ones is NaN in fp16 and bf16 */
    CK(run(L, b, rows, max_rows, 0));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(y, b.y, yb, cudaMemcpyDeviceToHost));
    return 0;
fail:
    return -1;
}

extern "C" int hck_quantize_host(int act_quant, int in_bf16, const uint16_t *x, int64_t rows, int64_t K,
                                 float *codes, float *scales, char *msg, size_t msglen)
{
    uint16_t *dx = nullptr;
    float *dc = nullptr, *ds = nullptr;
    int rc = -1;
    CK(cudaMalloc((void **)&dx, (size_t)rows * K * 2 + 2));
    CK(cudaMalloc((void **)&dc, (size_t)rows * K * 4 + 4));
    CK(cudaMalloc((void **)&ds, (size_t)rows * 4 + 4));
    CK(cudaMemcpy(dx, x, (size_t)rows * K * 2, cudaMemcpyHostToDevice));
    CK(hck::launch_act(act_quant, in_bf16, dx, rows, K, dc, ds, 0));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(codes, dc, (size_t)rows * K * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(scales, ds, (size_t)rows * 4, cudaMemcpyDeviceToHost));
    rc = 0;
fail:
    cudaFree(dx), cudaFree(dc), cudaFree(ds);
    return rc;
}

extern "C" int hck_gemm_time(hck_layer *L, int64_t rows, int iters, int flush, float *median_ms,
                             float *first_ms, char *msg, size_t msglen)
{
    const hck_desc &d = L->d;
    const int64_t off[2] = {0, rows};
    const size_t flush_bytes = flush ? (size_t)256 << 20 : 0;
    void *fl = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    cudaStream_t st = nullptr;
    cudaGraph_t gr = nullptr;
    cudaGraphExec_t gx = nullptr;
    std::vector<cudaEvent_t> ev;
    std::vector<float> t;
    Bufs b;
    int rc = -1;
    if (d.E != 1) {
        if (msg) snprintf(msg, msglen, "timing is for dense layers");
        return -1;
    }
    CK(b.alloc(L, rows));
    CK(cudaMemcpy(b.off, off, 16, cudaMemcpyHostToDevice));
    if (flush_bytes) CK(cudaMalloc(&fl, flush_bytes));
    if (flush_bytes) CK(cudaMemset(fl, 0, flush_bytes));
    random_kernel<<<1024, 256>>>(b.x, rows * d.K, d.out_bf16, 12345u);
    CK(cudaGetLastError());
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0));
    CK(run(L, b, rows, rows, 0));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(first_ms, e0, e1));
    CK(cudaDeviceSynchronize());
    /* the launches captured once as a CUDA graph, its replays timed with an
     * event pair around each (as bench/bench_ref.py times Humming) */
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    {
        cudaError_t le = run(L, b, rows, rows, st), ce = cudaStreamEndCapture(st, &gr);
        CK(le);
        CK(ce);
    }
    CK(cudaGraphInstantiate(&gx, gr, 0));
    for (int i = 0; i < 3; i++) CK(cudaGraphLaunch(gx, st));
    ev.assign(2 * (size_t)iters, nullptr);
    for (auto &v : ev) CK(cudaEventCreate(&v));
    for (int i = 0; i < iters; i++) {
        if (flush == 2) read_flush_kernel<<<1024, 256, 0, st>>>((const uint4 *)fl, flush_bytes / 16);
        else if (flush) CK(cudaMemsetAsync(fl, 0, flush_bytes, st));
        CK(cudaEventRecord(ev[2 * i], st));
        CK(cudaGraphLaunch(gx, st));
        CK(cudaEventRecord(ev[2 * i + 1], st));
    }
    CK(cudaEventSynchronize(ev[2 * iters - 1]));
    for (int i = 0; i < iters; i++) {
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    *median_ms = t.empty() ? 0.0f : t[t.size() / 2];
    rc = 0;
fail:
    for (auto &v : ev)
        if (v) cudaEventDestroy(v);
    if (gx) cudaGraphExecDestroy(gx);
    if (gr) cudaGraphDestroy(gr);
    if (st) cudaStreamDestroy(st);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaFree(fl);
    return rc;
}
