/* hc_timeline.cuh - per-block timeline of the wgmma kernel, a diagnostic build
 * only (nvcc -DHCK_TIMELINE; bench/README.md). Included by
 * hc_wgmma.cuh inside namespace hopper. Without HCK_TIMELINE every macro is
 * empty and the kernels are unchanged.
 *
 * Each block of a launch stamps %globaltimer at entry, at its first stage, at
 * the end of consumer thread 0's main loop, after the epilogue's staging,
 * after its partial sums are fenced, after the split sum's counter or cluster
 * barrier (the polled sum: after the partials' stores and after thread 0's
 * poll, with its rounds), and at the exit of consumer thread 0; the producer and consumer
 * thread 0 count the clock64 cycles they spend waiting on the ring's
 * barriers. hck_gemm_time prints a summary of the last timed launch
 * (timeline_report, "TIMELINE..." lines on stderr). The arrays are global
 * state, acceptable in a diagnostic build only. */
#ifdef HCK_TIMELINE
/* TL_GRP: the block's split group (the splits of one output block); TL_SPINS:
 * consumer thread 0's poll rounds in the polled split sum */
enum { TL_START, TL_LOOP, TL_SM, TL_LIN, TL_FIRST, TL_EXIT, TL_STAGED, TL_SYNCED, TL_FENCED, TL_GRP, TL_SPINS, TL_N };
constexpr unsigned TL_MAX = 8192; /* blocks recorded */
__device__ unsigned long long hck_tl[TL_MAX][TL_N];
__device__ long long hck_tlc[TL_MAX][4]; /* producer: cycles waiting on empty, loop; consumer 0: on full, loop */
__device__ __forceinline__ unsigned long long hck_gtimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ long long hck_clock()
{
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned hck_tl_lin() { return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); }
__device__ __forceinline__ void hck_tl_stamp(int i)
{
    if (threadIdx.x == 0 && hck_tl_lin() < TL_MAX) hck_tl[hck_tl_lin()][i] = hck_gtimer();
}
__device__ __forceinline__ void hck_tl_begin(unsigned grp)
{
    if (threadIdx.x != 0 || hck_tl_lin() >= TL_MAX) return;
    hck_tl[hck_tl_lin()][TL_GRP] = grp, hck_tl[hck_tl_lin()][TL_SPINS] = 0; /* nonzero: this launch polled */
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    hck_tl[hck_tl_lin()][TL_SM] = smid, hck_tl[hck_tl_lin()][TL_LIN] = hck_tl_lin();
    hck_tl[hck_tl_lin()][TL_START] = hck_gtimer();
}
struct hck_tl_exit { /* stamps consumer thread 0's exit, on every return path */
    __device__ ~hck_tl_exit() { hck_tl_stamp(TL_EXIT); }
};
/* wait cycles of thread 0 of a role: `slot` 0 producer, 2 consumer */
struct hck_tl_waits {
    long long waited, t0;
    __device__ hck_tl_waits() : waited(0), t0(hck_clock()) {}
    __device__ void save(int slot) const
    {
        if (hck_tl_lin() < TL_MAX) hck_tlc[hck_tl_lin()][slot] = waited, hck_tlc[hck_tl_lin()][slot + 1] = hck_clock() - t0;
    }
};
#define HCK_TL_BEGIN(grp) hck_tl_begin(grp)
#define HCK_TL_SPINS(cond, n) \
    do { if ((cond) && hck_tl_lin() < TL_MAX) hck_tl[hck_tl_lin()][TL_SPINS] = (n); } while (0)
#define HCK_TL_STAMP(i) hck_tl_stamp(i)
#define HCK_TL_FIRST_STAGE(bar) \
    do { if (threadIdx.x == 0) mbar_wait(bar, 0), hck_tl_stamp(TL_FIRST); } while (0)
#define HCK_TL_EXIT_GUARD() hck_tl_exit tl_exit_guard_
#define HCK_TL_WAITS(w) hck_tl_waits w
#define HCK_TL_TIMED_WAIT(w, stmt) \
    do { const long long t_ = hck_clock(); stmt; w.waited += hck_clock() - t_; } while (0)
#define HCK_TL_SAVE(w, slot, cond) \
    do { if (cond) w.save(slot); } while (0)

/* host: p-quantile of v (-1 when empty) */
inline double tl_q(std::vector<double> v, double f)
{
    if (v.empty()) return -1.0;
    std::sort(v.begin(), v.end());
    return v[(size_t)(f * (v.size() - 1))];
}

/* host: the blocks of the last launch (started within 100 us of the latest
 * start) and their loop ends by SM load (one block or more on the SM) */
inline void timeline_loop_report(const std::vector<const unsigned long long *> &b, unsigned long long s0)
{
    int per_sm[1024] = {0};
    for (auto r : b) per_sm[r[TL_SM] & 1023]++;
    std::vector<double> en, en1, en2, first, post;
    for (auto r : b) {
        en.push_back((r[TL_LOOP] - s0) / 1e3);
        (per_sm[r[TL_SM] & 1023] == 1 ? en1 : en2).push_back((r[TL_LOOP] - s0) / 1e3);
        if (r[TL_FIRST] > r[TL_START]) first.push_back((r[TL_FIRST] - r[TL_START]) / 1e3);
        if (r[TL_EXIT] > r[TL_LOOP]) post.push_back((r[TL_EXIT] - r[TL_LOOP]) / 1e3);
    }
    fprintf(stderr, "TIMELINE blocks=%zu first stage after start p50/100 %.2f %.2f us; loop end p0/10/50/90/100 %.2f %.2f "
            "%.2f %.2f %.2f; alone on an SM %zu (end p50 %.2f), sharing %zu (end p50 %.2f); exit - loop end p50/100 %.2f %.2f\n",
            b.size(), tl_q(first, .5), tl_q(first, 1), tl_q(en, 0), tl_q(en, .1), tl_q(en, .5), tl_q(en, .9), tl_q(en, 1),
            en1.size(), tl_q(en1, .5), en2.size(), tl_q(en2, .5), tl_q(post, .5), tl_q(post, 1));
}

/* host: blocks sharing an SM in pairs: how the one that started first and the
 * other fare (loop time from the first stage), and loop ends by launch order
 * in eighths of the grid (whether a block's place in the grid sets its pace) */
inline void timeline_pair_report(const std::vector<const unsigned long long *> &b, unsigned long long s0)
{
    const unsigned long long *sm_first[1024] = {nullptr}, *sm_second[1024] = {nullptr};
    int per_sm[1024] = {0};
    for (auto r : b) per_sm[r[TL_SM] & 1023]++;
    for (auto r : b) {
        const int m = (int)(r[TL_SM] & 1023);
        if (per_sm[m] != 2) continue;
        if (!sm_first[m]) sm_first[m] = r;
        else sm_second[m] = r;
    }
    std::vector<double> d_first, d_second, gap, pair_end;
    for (int m = 0; m < 1024; m++) {
        if (!sm_first[m] || !sm_second[m]) continue;
        const unsigned long long *a = sm_first[m], *c = sm_second[m];
        if (c[TL_START] < a[TL_START]) std::swap(a, c);
        d_first.push_back((a[TL_LOOP] - a[TL_FIRST]) / 1e3), d_second.push_back((c[TL_LOOP] - c[TL_FIRST]) / 1e3);
        gap.push_back(((double)c[TL_LOOP] - (double)a[TL_LOOP]) / 1e3);
        pair_end.push_back((std::max(a[TL_LOOP], c[TL_LOOP]) - s0) / 1e3);
    }
    fprintf(stderr, "TIMELINE pairs %zu: loop time first-started p10/50/90 %.2f %.2f %.2f, second %.2f %.2f %.2f; "
            "end second - first p10/50/90 %.2f %.2f %.2f; pair end p50/100 %.2f %.2f\n", d_first.size(),
            tl_q(d_first, .1), tl_q(d_first, .5), tl_q(d_first, .9), tl_q(d_second, .1), tl_q(d_second, .5),
            tl_q(d_second, .9), tl_q(gap, .1), tl_q(gap, .5), tl_q(gap, .9), tl_q(pair_end, .5), tl_q(pair_end, 1));
    std::vector<double> by[8];
    unsigned long long nmax = 0;
    for (auto r : b) nmax = std::max(nmax, r[TL_LIN] + 1);
    for (auto r : b) by[std::min<unsigned long long>(7, r[TL_LIN] * 8 / nmax)].push_back((r[TL_LOOP] - s0) / 1e3);
    fprintf(stderr, "TIMELINE loop end p50 by eighth of the grid:");
    for (auto &v : by) fprintf(stderr, " %.2f", tl_q(v, .5));
    fprintf(stderr, "\n");
}

/* host: the stamps of the block that exited last, and the barrier wait shares */
inline void timeline_tail_report(const std::vector<const unsigned long long *> &b, unsigned long long s0,
                                 const long long (*tc)[4])
{
    const unsigned long long *z = b[0];
    for (auto r : b)
        if (r[TL_EXIT] > z[TL_EXIT]) z = r;
    auto rel = [&](unsigned long long v) { return v > s0 ? (v - s0) / 1e3 : -1.0; };
    fprintf(stderr, "TIMELINE last exit (block %llu, SM %llu) us: start %.2f first %.2f loop end %.2f staged %.2f "
            "fenced %.2f synced/counted %.2f exit %.2f\n", z[TL_LIN], z[TL_SM], rel(z[TL_START]), rel(z[TL_FIRST]),
            rel(z[TL_LOOP]), rel(z[TL_STAGED]), rel(z[TL_FENCED]), rel(z[TL_SYNCED]), rel(z[TL_EXIT]));
    std::vector<double> pw, cw;
    for (auto r : b) {
        const long long *c = tc[r[TL_LIN] % TL_MAX];
        if (c[1] > 0) pw.push_back((double)c[0] / c[1]);
        if (c[3] > 0) cw.push_back((double)c[2] / c[3]);
    }
    fprintf(stderr, "TIMELINE share of the loop waiting p10/50/90: producer on empty %.2f %.2f %.2f; consumer thread 0 "
            "on full %.2f %.2f %.2f\n", tl_q(pw, .1), tl_q(pw, .5), tl_q(pw, .9), tl_q(cw, .1), tl_q(cw, .5), tl_q(cw, .9));
}

/* host: the polled split sum, per split group, relative to the group's latest
 * loop end: its latest partial store (TL_FENCED), the first and last split's
 * poll done (TL_SYNCED) and its last exit; and thread 0's poll per block:
 * duration, rounds, time per round */
inline void timeline_group_report(const std::vector<const unsigned long long *> &b, unsigned long long s0)
{
    std::map<unsigned long long, std::vector<const unsigned long long *>> g;
    for (auto r : b)
        if (r[TL_SPINS] > 0 && r[TL_SYNCED] > r[TL_FENCED] && r[TL_FENCED] > r[TL_START]) g[r[TL_GRP]].push_back(r);
    if (g.empty()) return; /* no polled sum in this launch */
    std::vector<double> lend, st, pfirst, plast, ex, pd, spins, rt;
    auto us = [](unsigned long long a, unsigned long long z) { return ((double)a - (double)z) / 1e3; };
    for (auto &kv : g) {
        unsigned long long l = 0, f = 0, p0 = ~0ull, p1 = 0, x = 0;
        for (auto r : kv.second) {
            l = std::max(l, r[TL_LOOP]), f = std::max(f, r[TL_FENCED]), x = std::max(x, r[TL_EXIT]);
            p0 = std::min(p0, r[TL_SYNCED]), p1 = std::max(p1, r[TL_SYNCED]);
            pd.push_back(us(r[TL_SYNCED], r[TL_FENCED])), spins.push_back((double)r[TL_SPINS]);
            rt.push_back(pd.back() / std::max(1.0, spins.back()));
        }
        lend.push_back(us(l, s0)), st.push_back(us(f, l)), pfirst.push_back(us(p0, l));
        plast.push_back(us(p1, l)), ex.push_back(us(x, l));
    }
    fprintf(stderr, "TIMELINE poll (thread 0) p10/50/90: duration %.2f %.2f %.2f us, rounds %.0f %.0f %.0f, us per "
            "round %.2f %.2f %.2f\n", tl_q(pd, .1), tl_q(pd, .5), tl_q(pd, .9), tl_q(spins, .1), tl_q(spins, .5),
            tl_q(spins, .9), tl_q(rt, .1), tl_q(rt, .5), tl_q(rt, .9));
    fprintf(stderr, "TIMELINE split groups %zu: latest loop end p50/100 %.2f %.2f; after it (p50/100 us): partials "
            "stored %.2f %.2f, first poll done %.2f %.2f, last poll done %.2f %.2f, last exit %.2f %.2f\n", g.size(),
            tl_q(lend, .5), tl_q(lend, 1), tl_q(st, .5), tl_q(st, 1), tl_q(pfirst, .5), tl_q(pfirst, 1),
            tl_q(plast, .5), tl_q(plast, 1), tl_q(ex, .5), tl_q(ex, 1));
}

/* host: reads the device arrays back and prints the summaries */
inline void timeline_report()
{
    static unsigned long long tl[TL_MAX][TL_N];
    static long long tc[TL_MAX][4];
    if (cudaMemcpyFromSymbol(tl, hck_tl, sizeof tl) != cudaSuccess ||
        cudaMemcpyFromSymbol(tc, hck_tlc, sizeof tc) != cudaSuccess)
        return;
    unsigned long long smax = 0, s0 = ~0ull;
    for (auto &r : tl) smax = std::max(smax, r[TL_START]);
    std::vector<const unsigned long long *> b;
    for (auto &r : tl)
        if (r[TL_START] + 100000 > smax && r[TL_LOOP] > r[TL_START]) b.push_back(r), s0 = std::min(s0, r[TL_START]);
    if (b.empty()) return;
    timeline_loop_report(b, s0);
    timeline_pair_report(b, s0);
    timeline_tail_report(b, s0, tc);
    timeline_group_report(b, s0);
}
#else
#define HCK_TL_BEGIN(grp) ((void)0)
#define HCK_TL_SPINS(cond, n) ((void)0)
#define HCK_TL_STAMP(i) ((void)0)
#define HCK_TL_FIRST_STAGE(bar) ((void)0)
#define HCK_TL_EXIT_GUARD() ((void)0)
#define HCK_TL_WAITS(w) ((void)0)
#define HCK_TL_TIMED_WAIT(w, stmt) stmt
#define HCK_TL_SAVE(w, slot, cond) ((void)0)
#endif
