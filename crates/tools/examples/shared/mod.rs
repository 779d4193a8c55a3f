//! What the measuring examples share (a folder without `main.rs`, so not an example).

/// Prints the name and the 10th, 50th, 90th and 99th percentiles of `samples` (ns).
pub fn print_percentiles(name: &str, mut samples: Vec<u64>) {
    samples.sort_unstable();
    let at = |quantile: f64| samples[((samples.len() - 1) as f64 * quantile) as usize];
    println!(
        "{name:<40} P10 {:>7} ns  P50 {:>7} ns  P90 {:>7} ns  P99 {:>7} ns",
        at(0.10),
        at(0.50),
        at(0.90),
        at(0.99)
    );
}
