use mergebook::book::{Levels, Side};
use mergebook::walker::Walker;
use std::hint::black_box;
fn main() {
    let side = br#"[["35496.06000000","0.29859300"],["35494.02000000","0.00056300"],["35492.76000000","0.29281400"],["35492.74000000","0.33317500"],["35492.69000000","0.24197100"],["35490.13000000","0.31000000"],["35488.55000000","0.11438100"],["35487.72000000","0.43845000"],["35487.71000000","2.32424100"],["35487.70000000","0.00400000"]]  "#;
    let mut levels = Levels::default();
    let n: u32 = std::env::args()
        .nth(1)
        .map(|a| a.parse().unwrap())
        .unwrap_or(100_000);
    let t = std::time::Instant::now();
    for _ in 0..n {
        let mut w = Walker::new(black_box(side));
        w.levels(Side::Bid, 10, &mut levels).unwrap();
    }
    eprintln!("levels x10: {:?}", t.elapsed() / n);
}
