//! Repeated log lines, rate-limited: a venue sending thousands of bad frames, or a
//! reconnect storm, writes at most one line a second of each kind, and that line counts
//! the ones suppressed since the last (the metrics count every event).

/// What the logs say, for the unit tests: every line written at `level` and above while
/// the guard of [`CapturedLogs::start`] lives on this thread.
#[cfg(test)]
#[derive(Clone, Default)]
pub(crate) struct CapturedLogs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

#[cfg(test)]
impl CapturedLogs {
    /// Starts capturing this thread's lines at `level` and above, until the guard drops.
    pub(crate) fn start(&self, level: tracing::Level) -> tracing::subscriber::DefaultGuard {
        let writer = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(level)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    /// Every line captured so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("not poisoned")).into_owned()
    }
}

#[cfg(test)]
impl std::io::Write for CapturedLogs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .expect("not poisoned")
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One kind of repeated line.
pub struct LogLimiter {
    period_ns: u64,
    /// No line before this.
    next_ns: u64,
    /// Lines suppressed since the last one written.
    suppressed: u64,
}

impl LogLimiter {
    /// At most one line a second.
    pub const fn per_second() -> LogLimiter {
        LogLimiter {
            period_ns: 1_000_000_000,
            next_ns: 0,
            suppressed: 0,
        }
    }

    /// Whether the line due at `now_ns` is written: `Some(suppressed)`, the lines left out
    /// since the last one (for the line to say), or `None` (counted as suppressed).
    pub fn allow(&mut self, now_ns: u64) -> Option<u64> {
        if now_ns < self.next_ns {
            self.suppressed += 1;
            return None;
        }
        self.next_ns = now_ns.saturating_add(self.period_ns);
        Some(std::mem::take(&mut self.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_a_second_counting_the_ones_left_out() {
        const MS: u64 = 1_000_000;
        let mut limiter = LogLimiter::per_second();
        let written: Vec<(u64, u64)> = (0..3000u64)
            .filter_map(|ms| Some((ms, limiter.allow(ms * MS)?)))
            .collect();
        assert_eq!(written, [(0, 0), (1000, 999), (2000, 999)]);
    }
}
