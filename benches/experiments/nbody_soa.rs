// Session 14 experiment (docs/notes/jit.md, "Session 14"): nbody's advance on the
// structure-of-arrays layout of benches/host/nbody.cajeta, as LLVM compiles it with its loops
// kept rolled, three ways: `s` scalar, `r` with body i's velocity in registers across the j
// loop, `v` with the j loop vectorised by two (SSE2; every lane computes what the scalar code
// does, and body i's velocity takes the lanes' terms in order, so all three print the same).
// Build: rustc -C opt-level=3 -C target-cpu=x86-64-v2 -C llvm-args=-unroll-threshold=0 \
//   -C llvm-args=-vectorize-slp=false -C llvm-args=-vectorize-loops=false -o nb nbody_soa.rs
// Run: ./nb s|r|v STEPS
use std::arch::x86_64::*;
use std::hint::black_box;
const N: usize = 5;
struct S { x:[f64;N], y:[f64;N], z:[f64;N], vx:[f64;N], vy:[f64;N], vz:[f64;N], m:[f64;N] }
#[inline(never)]
fn advance_scalar(s: &mut S, dt: f64, n: usize) {
    for i in 0..n { for j in i+1..n {
        let dx = s.x[i]-s.x[j]; let dy = s.y[i]-s.y[j]; let dz = s.z[i]-s.z[j];
        let d2 = (dx*dx+dy*dy)+dz*dz; let mag = dt/(d2*d2.sqrt());
        s.vx[i] = s.vx[i]-(dx*s.m[j])*mag; s.vy[i] = s.vy[i]-(dy*s.m[j])*mag; s.vz[i] = s.vz[i]-(dz*s.m[j])*mag;
        s.vx[j] = s.vx[j]+(dx*s.m[i])*mag; s.vy[j] = s.vy[j]+(dy*s.m[i])*mag; s.vz[j] = s.vz[j]+(dz*s.m[i])*mag;
    }}
    for i in 0..n { s.x[i] = s.x[i]+dt*s.vx[i]; s.y[i] = s.y[i]+dt*s.vy[i]; s.z[i] = s.z[i]+dt*s.vz[i]; }
}
#[inline(never)]
fn advance_reg(s: &mut S, dt: f64, n: usize) {
    for i in 0..n { let (mut ax, mut ay, mut az) = (s.vx[i], s.vy[i], s.vz[i]); for j in i+1..n {
        let dx = s.x[i]-s.x[j]; let dy = s.y[i]-s.y[j]; let dz = s.z[i]-s.z[j];
        let d2 = (dx*dx+dy*dy)+dz*dz; let mag = dt/(d2*d2.sqrt());
        ax = ax-(dx*s.m[j])*mag; ay = ay-(dy*s.m[j])*mag; az = az-(dz*s.m[j])*mag;
        s.vx[j] = s.vx[j]+(dx*s.m[i])*mag; s.vy[j] = s.vy[j]+(dy*s.m[i])*mag; s.vz[j] = s.vz[j]+(dz*s.m[i])*mag;
    } s.vx[i]=ax; s.vy[i]=ay; s.vz[i]=az; }
    for i in 0..n { s.x[i] = s.x[i]+dt*s.vx[i]; s.y[i] = s.y[i]+dt*s.vy[i]; s.z[i] = s.z[i]+dt*s.vz[i]; }
}
#[inline(never)]
unsafe fn advance_vec(s: &mut S, dt: f64, n: usize) {
    let dtv = _mm_set1_pd(dt);
    for i in 0..n {
        let mut j = i+1;
        let xi = _mm_set1_pd(s.x[i]); let yi = _mm_set1_pd(s.y[i]); let zi = _mm_set1_pd(s.z[i]);
        let mi = _mm_set1_pd(s.m[i]);
        while j + 1 < n {
            let p = |a: &[f64;N]| _mm_loadu_pd(a.as_ptr().add(j));
            let dx = _mm_sub_pd(xi, p(&s.x)); let dy = _mm_sub_pd(yi, p(&s.y)); let dz = _mm_sub_pd(zi, p(&s.z));
            let d2 = _mm_add_pd(_mm_add_pd(_mm_mul_pd(dx,dx),_mm_mul_pd(dy,dy)),_mm_mul_pd(dz,dz));
            let mag = _mm_div_pd(dtv, _mm_mul_pd(d2, _mm_sqrt_pd(d2)));
            let mj = p(&s.m);
            let wx = _mm_mul_pd(_mm_mul_pd(dx,mj),mag); let wy = _mm_mul_pd(_mm_mul_pd(dy,mj),mag); let wz = _mm_mul_pd(_mm_mul_pd(dz,mj),mag);
            s.vx[i] = (s.vx[i] - _mm_cvtsd_f64(wx)) - _mm_cvtsd_f64(_mm_unpackhi_pd(wx,wx));
            s.vy[i] = (s.vy[i] - _mm_cvtsd_f64(wy)) - _mm_cvtsd_f64(_mm_unpackhi_pd(wy,wy));
            s.vz[i] = (s.vz[i] - _mm_cvtsd_f64(wz)) - _mm_cvtsd_f64(_mm_unpackhi_pd(wz,wz));
            let st = |a: &mut [f64;N], d: __m128d| { let q = a.as_mut_ptr().add(j); _mm_storeu_pd(q, _mm_add_pd(_mm_loadu_pd(q), _mm_mul_pd(_mm_mul_pd(d, mi), mag))); };
            st(&mut s.vx, dx); st(&mut s.vy, dy); st(&mut s.vz, dz);
            j += 2;
        }
        while j < n {
            let dx = s.x[i]-s.x[j]; let dy = s.y[i]-s.y[j]; let dz = s.z[i]-s.z[j];
            let d2 = (dx*dx+dy*dy)+dz*dz; let mag = dt/(d2*d2.sqrt());
            s.vx[i] = s.vx[i]-(dx*s.m[j])*mag; s.vy[i] = s.vy[i]-(dy*s.m[j])*mag; s.vz[i] = s.vz[i]-(dz*s.m[j])*mag;
            s.vx[j] = s.vx[j]+(dx*s.m[i])*mag; s.vy[j] = s.vy[j]+(dy*s.m[i])*mag; s.vz[j] = s.vz[j]+(dz*s.m[i])*mag;
            j += 1;
        }
    }
    let mut i = 0;
    while i + 1 < n { 
        let a = |x: &mut [f64;N], v: &[f64;N]| { let q = x.as_mut_ptr().add(i); _mm_storeu_pd(q, _mm_add_pd(_mm_loadu_pd(q), _mm_mul_pd(dtv, _mm_loadu_pd(v.as_ptr().add(i))))); };
        a(&mut s.x, &s.vx); a(&mut s.y, &s.vy); a(&mut s.z, &s.vz); i += 2; }
    while i < n { s.x[i] = s.x[i]+dt*s.vx[i]; s.y[i] = s.y[i]+dt*s.vy[i]; s.z[i] = s.z[i]+dt*s.vz[i]; i += 1; }
}
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let steps: usize = a[2].parse().unwrap();
    let mut s = S { x:[0.0, 4.84143144246472090e+00, 8.34336671824457987e+00, 1.28943695621391310e+01, 1.53796971148509165e+01], y:[0.0,-1.16032004402742839e+00,4.12479856412430479e+00,-1.51111514016986312e+01,-2.59193146099879641e+01], z:[0.0,-1.03622044471123109e-01,-4.03523417114321381e-01,-2.23307578892655734e-01,1.79258772950371181e-01], vx:[0.0,1.66007664274403694e-03*365.24,-2.76742510726862411e-03*365.24,2.96460137564761618e-03*365.24,2.68067772490389322e-03*365.24], vy:[0.0,7.69901118419740425e-03*365.24,4.99852801234917238e-03*365.24,2.37847173959480950e-03*365.24,1.62824170038242295e-03*365.24], vz:[0.0,-6.90460016972063023e-05*365.24,2.30417297573763929e-05*365.24,-2.96589568540237556e-05*365.24,-9.51592254519715870e-05*365.24], m:[39.47841760435743,9.54791938424326609e-04*39.47841760435743,2.85885980666130812e-04*39.47841760435743,4.36624404335156298e-05*39.47841760435743,5.15138902046611451e-05*39.47841760435743]};
    let n = black_box(N);
    for _ in 0..steps { if a[1] == "r" { advance_reg(&mut s, 0.01, n) } else if a[1] == "v" { unsafe { advance_vec(&mut s, 0.01, n) } } else { advance_scalar(&mut s, 0.01, n) } }
    println!("{} {}", s.x[1], s.vx[2]);
}
