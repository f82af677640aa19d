// Session 26 experiment (benches/RESULTS.md, "Session 26"): nbody as benches/host/nbody.cajeta
// writes it — seven separately allocated arrays (heap vectors, which LLVM cannot prove
// distinct), bounds-checked, the spec's evaluation order — compiled by LLVM with every
// optimisation. `./nbh STEPS dyn` runs the loops to a body count LLVM cannot see (the shape the
// JIT compiles); `./nbh STEPS five` to the constant 5, which LLVM may unroll fully.
// Build: rustc -C opt-level=3 -C target-cpu=native -o nbh nbody_heap_arrays.rs
// Both print the benchmark's checksum line.
use std::hint::black_box;
const PI: f64 = 3.141592653589793;
const SOLAR_MASS: f64 = 4.0 * PI * PI;
const DPY: f64 = 365.24;
struct S { x: Vec<f64>, y: Vec<f64>, z: Vec<f64>, vx: Vec<f64>, vy: Vec<f64>, vz: Vec<f64>, m: Vec<f64> }
#[inline(always)]
fn advance(s: &mut S, n: usize, dt: f64) {
    let (px, py, pz, pvx, pvy, pvz, m) = (&mut s.x, &mut s.y, &mut s.z, &mut s.vx, &mut s.vy, &mut s.vz, &s.m);
    for i in 0..n {
        for j in i + 1..n {
            let dx = px[i] - px[j];
            let dy = py[i] - py[j];
            let dz = pz[i] - pz[j];
            let d2 = (dx * dx + dy * dy) + dz * dz;
            let mag = dt / (d2 * d2.sqrt());
            pvx[i] = pvx[i] - (dx * m[j]) * mag;
            pvy[i] = pvy[i] - (dy * m[j]) * mag;
            pvz[i] = pvz[i] - (dz * m[j]) * mag;
            pvx[j] = pvx[j] + (dx * m[i]) * mag;
            pvy[j] = pvy[j] + (dy * m[i]) * mag;
            pvz[j] = pvz[j] + (dz * m[i]) * mag;
        }
    }
    for i in 0..n {
        px[i] = px[i] + dt * pvx[i];
        py[i] = py[i] + dt * pvy[i];
        pz[i] = pz[i] + dt * pvz[i];
    }
}
fn energy(s: &S) -> f64 {
    let mut e = 0.0;
    for i in 0..5 {
        e += (0.5 * s.m[i]) * ((s.vx[i] * s.vx[i] + s.vy[i] * s.vy[i]) + s.vz[i] * s.vz[i]);
        for j in i + 1..5 {
            let (dx, dy, dz) = (s.x[i] - s.x[j], s.y[i] - s.y[j], s.z[i] - s.z[j]);
            e -= (s.m[i] * s.m[j]) / ((dx * dx + dy * dy) + dz * dz).sqrt();
        }
    }
    e
}
fn main() {
    let steps: u64 = std::env::args().nth(1).map(|a| a.parse().unwrap()).unwrap_or(1000000);
    let b = [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
        [4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01, 1.66007664274403694e-03, 7.69901118419740425e-03, -6.90460016972063023e-05, 9.54791938424326609e-04],
        [8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01, -2.76742510726862411e-03, 4.99852801234917238e-03, 2.30417297573763929e-05, 2.85885980666130812e-04],
        [1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01, 2.96460137564761618e-03, 2.37847173959480950e-03, -2.96589568540237556e-05, 4.36624404335156298e-05],
        [1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01, 2.68067772490389322e-03, 1.62824170038242295e-03, -9.51592254519715870e-05, 5.15138902046611451e-05]];
    let col = |k: usize, f: f64| b.iter().map(|r| r[k] * f).collect::<Vec<f64>>();
    let mut s = S { x: col(0, 1.0), y: col(1, 1.0), z: col(2, 1.0), vx: col(3, DPY), vy: col(4, DPY), vz: col(5, DPY), m: col(6, SOLAR_MASS) };
    let (mut p0, mut p1, mut p2) = (0.0, 0.0, 0.0);
    for i in 0..5 { p0 += s.vx[i] * s.m[i]; p1 += s.vy[i] * s.m[i]; p2 += s.vz[i] * s.m[i]; }
    s.vx[0] = -p0 / SOLAR_MASS; s.vy[0] = -p1 / SOLAR_MASS; s.vz[0] = -p2 / SOLAR_MASS;
    let e0 = energy(&s);
    if std::env::args().nth(2).as_deref() == Some("five") {
        for _ in 0..steps { advance(&mut s, 5, 0.01); }
    } else {
        let n = black_box(5usize);
        for _ in 0..steps { advance(&mut s, n, 0.01); }
    }
    println!("{:.9} {:.9}", e0, energy(&s));
}
