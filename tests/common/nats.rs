//! A real `nats-server` (Debian's package) for the tests that publish to NATS.

use super::KillOnDrop;
use std::process::{Command, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// A `nats-server` on `port` (its monitoring on `monitor`), with `extra` configuration.
pub struct NatsServer {
    pub port: u16,
    monitor: u16,
    _process: KillOnDrop,
}

impl NatsServer {
    pub fn start(port: u16, extra: &str) -> Option<NatsServer> {
        let binary = super::tool("nats-server", "nats-server")?;
        let monitor = super::free_port();
        let config = std::env::temp_dir().join(format!("mergebook-nats-{port}.conf"));
        std::fs::write(
            &config,
            format!("listen: 127.0.0.1:{port}\nhttp: 127.0.0.1:{monitor}\n{extra}\n"),
        )
        .unwrap();
        let process = Command::new(binary)
            .arg("-c")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = NatsServer {
            port,
            monitor,
            _process: KillOnDrop(process),
        };
        super::wait_until("nats-server to listen", WAIT, || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// A counter of the server's `/varz` (its own view of its clients).
    pub fn varz(&self, field: &str) -> u64 {
        let address = ([127, 0, 0, 1], self.monitor).into();
        let (_, body) = super::http_get(address, "/varz").unwrap_or_default();
        let varz: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        varz[field].as_u64().unwrap_or(0)
    }
}
