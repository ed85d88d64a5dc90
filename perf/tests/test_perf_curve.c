/* test_perf_curve.c — the cost-curve fit and the cliff rule of perf-report
 * (conformance/harness/perf/perf_curve.c): exact power laws give their exponent exactly, a
 * known scatter gives the textbook standard error, a 25 % rate drop is a cliff and a 15 % one
 * is not, and a curve's points come out sorted by the size it sweeps. */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>

#include "perf_curve.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* t = 3e-9 x^k at x = 128 ... 16384: the fit returns k and log 3e-9 to rounding, and a zero
 * standard error (the points lie on the line). */
Test(curve_fit, exact_power_laws_give_their_exponent)
{
    const double ks[] = {2.0, 1.0, 0.5, 1.1};
    for (size_t j = 0; j < N(ks); j++) {
        double x[8], t[8];
        for (int i = 0; i < 8; i++) {
            x[i] = 128.0 * pow(2.0, i);
            t[i] = 3e-9 * pow(x[i], ks[j]);
        }
        pc_fit f;
        cr_assert_eq(pc_fit_power(x, t, 8, &f), 0);
        cr_assert(fabs(f.k - ks[j]) < 1e-12, "k: got %.17g, want %g", f.k, ks[j]);
        cr_assert(fabs(f.a - log(3e-9)) < 1e-9, "a: got %.17g", f.a);
        cr_assert(f.se_k < 1e-12, "se_k: %g", f.se_k);
        cr_assert_eq(f.n, 8);
    }
    /* Irregular sizes (not powers of two) are as good. */
    const double x[] = {100, 1000, 3000, 7777, 16384};
    double t[5];
    for (int i = 0; i < 5; i++)
        t[i] = 0.25 * x[i] * x[i];
    pc_fit f;
    cr_assert_eq(pc_fit_power(x, t, 5, &f), 0);
    cr_assert(fabs(f.k - 2.0) < 1e-12, "k: %.17g", f.k);
}

/* A uniform slowdown (another tenant taking half the machine throughout) moves the intercept,
 * never the exponent. */
Test(curve_fit, a_uniform_slowdown_keeps_k)
{
    double x[6], t[6], slow[6];
    for (int i = 0; i < 6; i++) {
        x[i] = 1024.0 * pow(2.0, i);
        t[i] = 1e-6 * x[i] * (1 + 0.03 * (i % 2)); /* a little scatter */
        slow[i] = 2.0 * t[i];
    }
    pc_fit a, b;
    cr_assert_eq(pc_fit_power(x, t, 6, &a), 0);
    cr_assert_eq(pc_fit_power(x, slow, 6, &b), 0);
    cr_assert(fabs(a.k - b.k) < 1e-12);
    cr_assert(fabs(a.se_k - b.se_k) < 1e-12);
    cr_assert(fabs(b.a - a.a - log(2.0)) < 1e-12);
}

/* Three points, log x = 0, 1, 2 (x = 1, e, e^2) and log t = 0, 1 + d, 2: the least-squares
 * slope is 1 (the middle point's error is symmetric about the line through the ends), the
 * line passes 1 + d/3 at the middle, residuals -d/3, 2d/3, -d/3: RSS = 6 d^2 / 9, s^2 = RSS /
 * (3 - 2), sum (log x - 1)^2 = 2, so se_k = sqrt(d^2 / 3) = d / sqrt 3. */
Test(curve_fit, standard_error_by_hand)
{
    const double d = 0.3;
    const double x[] = {1.0, exp(1.0), exp(2.0)}, t[] = {1.0, exp(1.0 + d), exp(2.0)};
    pc_fit f;
    cr_assert_eq(pc_fit_power(x, t, 3, &f), 0);
    cr_assert(fabs(f.k - 1.0) < 1e-12, "k: %.17g", f.k);
    cr_assert(fabs(f.se_k - d / sqrt(3.0)) < 1e-12, "se_k: %.17g", f.se_k);
    cr_assert(fabs(f.a - d / 3.0) < 1e-12, "a: %.17g", f.a);
}

Test(curve_fit, degenerate_inputs)
{
    const double x2[] = {1024, 2048}, t2[] = {1e-3, 2e-3};
    pc_fit f = {0};
    /* Two points: the line through both, no error to estimate. */
    cr_assert_eq(pc_fit_power(x2, t2, 2, &f), 0);
    cr_assert(fabs(f.k - 1.0) < 1e-12);
    cr_assert(isnan(f.se_k));
    /* One point, the same size twice, a zero or non-finite value: no fit. */
    pc_fit g = {.k = 42};
    cr_assert_eq(pc_fit_power(x2, t2, 1, &g), -1);
    const double same[] = {512, 512}, zero[] = {1e-3, 0}, inf[] = {1e-3, INFINITY};
    cr_assert_eq(pc_fit_power(same, t2, 2, &g), -1);
    cr_assert_eq(pc_fit_power(x2, zero, 2, &g), -1);
    cr_assert_eq(pc_fit_power(x2, inf, 2, &g), -1);
    cr_assert_eq(g.k, 42, "out is left alone on failure");
}

/* The rule: the rate after < (1 - drop) x the rate before. */
Test(curve_cliff, a_25_percent_drop_is_a_cliff_15_is_not)
{
    cr_assert(pc_is_cliff(100.0, 75.0, PC_DEFAULT_DROP));
    cr_assert(!pc_is_cliff(100.0, 85.0, PC_DEFAULT_DROP));
    cr_assert(!pc_is_cliff(100.0, 80.0, PC_DEFAULT_DROP), "exactly 20 %% is not more than 20 %%");
    cr_assert(pc_is_cliff(100.0, 79.9, PC_DEFAULT_DROP));
    cr_assert(!pc_is_cliff(100.0, 140.0, PC_DEFAULT_DROP), "a rise is never a cliff");
    cr_assert(pc_is_cliff(100.0, 85.0, 0.10), "a tighter --cliff-drop catches 15 %%");
}

/* pc_point_cliff: where both memory-bound points have the bandwidth read beside them, the rate
 * and its share of that bandwidth must both drop, so a swing of the machine's bandwidth is no
 * cliff, whether the kernel follows it (rate down, share flat) or is far from it (rate flat,
 * share down), and a kernel's own drop is one; without both shares, the rates alone. */
Test(curve_cliffs, share_of_the_bandwidth_beside)
{
    const pc_point a = {.rate = 63.4, .share = 63.4 / 74.2},
                   follows = {.rate = 45.7, .share = 45.7 / 54.5},
                   own = {.rate = 45.7, .share = 45.7 / 74.2}, plain = {.rate = 45.7},
                   slow = {.rate = 0.22, .share = 0.22 / 54.5},
                   slow_more_bw = {.rate = 0.22, .share = 0.22 / 85.0};
    cr_assert(!pc_point_cliff(&a, &follows, PC_DEFAULT_DROP), "GB/s -28 %%, share -1.7 %%");
    cr_assert(pc_point_cliff(&a, &own, PC_DEFAULT_DROP), "GB/s -28 %%, share -28 %%");
    cr_assert(!pc_point_cliff(&slow, &slow_more_bw, PC_DEFAULT_DROP), "GB/s flat, share -36 %%");
    cr_assert(pc_point_cliff(&a, &plain, PC_DEFAULT_DROP), "no share beside: the rates");
    cr_assert(pc_point_cliff(&(pc_point){.rate = 60, .share = 0.9}, &plain, PC_DEFAULT_DROP),
              "one share only: the rates");
    cr_assert(!pc_point_cliff(&follows, &a, PC_DEFAULT_DROP), "a rise is never a cliff");
}

/* pc_points: the curve's OK shapes of one dtype, sorted by the swept size, the rate and work of
 * their bound; other curves, other dtypes and untimed shapes left out (and counted). */
Test(curve_points, sorted_filtered_and_counted)
{
    pj_shape sh[] = {
        {.id = "c.L4096.f32",
         .dtype = "f32",
         .curve = "pre",
         .lk = 4096,
         .lq = 4096,
         .b = 1,
         .status = PJ_OK,
         .median_s = 4.0,
         .gflops = 50,
         .flops = 2e11,
         .bound = PJ_COMPUTE},
        {.id = "c.L1024.f32",
         .dtype = "f32",
         .curve = "pre",
         .lk = 1024,
         .lq = 1024,
         .b = 1,
         .status = PJ_OK,
         .median_s = 0.25,
         .gflops = 52,
         .flops = 1.3e10,
         .bound = PJ_COMPUTE},
        {.id = "c.L1024.bf16",
         .dtype = "bf16",
         .curve = "pre",
         .lk = 1024,
         .lq = 1024,
         .b = 1,
         .status = PJ_OK,
         .median_s = 0.3,
         .gflops = 44,
         .flops = 1.3e10,
         .bound = PJ_COMPUTE},
        {.id = "c.L2048.f32",
         .dtype = "f32",
         .curve = "pre",
         .lk = 2048,
         .lq = 2048,
         .b = 1,
         .status = PJ_SKIPPED},
        {.id = "d.Lk1024.f32",
         .dtype = "f32",
         .curve = "dec",
         .lk = 1024,
         .lq = 1,
         .b = 1,
         .status = PJ_OK,
         .median_s = 1e-3,
         .kv_gbs = 8,
         .kv_bytes = 8e6,
         .read_gbs_beside = 40,
         .bound = PJ_MEMORY},
        {.id = "c.L512.f32",
         .dtype = "f32",
         .curve = "pre",
         .lk = 512,
         .lq = 512,
         .b = 1,
         .status = PJ_OK,
         .median_s = 0.07,
         .gflops = 48,
         .flops = 3.4e9,
         .bound = PJ_COMPUTE},
    };
    const pj_backend be = {.name = "cpu", .shapes = sh, .n = N(sh)};
    const pj_curve pre = {"pre", PJ_X_LK, 2.0}, dec = {"dec", PJ_X_LK, 1.0};
    pc_point p[N(sh)];
    size_t untimed = 99;
    cr_assert_eq(pc_points(&be, &pre, "f32", p, &untimed), 3);
    cr_assert_eq(untimed, 1);
    cr_assert_eq(p[0].x, 512);
    cr_assert_eq(p[1].x, 1024);
    cr_assert_eq(p[2].x, 4096);
    cr_assert_eq(p[2].t, 4.0);
    cr_assert_eq(p[2].rate, 50);
    cr_assert_eq(p[2].work, 2e11);
    cr_assert_eq(p[2].share, 0, "compute-bound: no share");
    cr_assert_eq(pc_points(&be, &dec, "f32", p, &untimed), 1);
    cr_assert_eq(p[0].rate, 8, "memory-bound: GB/s");
    cr_assert_eq(p[0].work, 8e6, "memory-bound: bytes of K and V");
    cr_assert_eq(p[0].share, 0.2, "memory-bound: the share of the bandwidth beside");
    cr_assert_eq(untimed, 0);
    /* A batch sweep's size is b. */
    const pj_curve bat = {"pre", PJ_X_BATCH, 1.0};
    cr_assert_eq(pc_points(&be, &bat, "bf16", p, NULL), 1);
    cr_assert_eq(p[0].x, 1);
}
