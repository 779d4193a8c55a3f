//! The deployment artifacts against a running `mergebook` (the simulator config):
//! a real Prometheus server scrapes it and answers queries, and every metric the Grafana
//! dashboard and the alert rules use exists in a live `/metrics`. The artifacts' syntax is
//! checked by scripts/check-deploy (promtool, systemd-analyze).

use crate::common;

use common::{KillOnDrop, free_port, http_get, mergebook, tool, wait_until};
use serde_json::Value;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// The PromQL expressions of the Grafana dashboard.
fn dashboard_queries() -> Vec<String> {
    let path = Path::new(REPO).join("deploy/grafana/dashboards/mergebook.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let queries: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|panel| panel["targets"].as_array().unwrap())
        .map(|target| target["expr"].as_str().unwrap().to_owned())
        .collect();
    assert!(queries.len() >= 9, "{queries:?}");
    queries
}

/// Every `orderbook_*` name in `text`.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find("orderbook_") {
        let name: String = rest[start..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[start + name.len()..];
        names.insert(name);
    }
    names
}

/// The metric families of a /metrics text (histograms under their series names).
fn exported_series(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| line.split(['{', ' ']).next().unwrap().to_owned())
        .collect()
}

fn both_venues_synced(metrics: SocketAddr) -> Option<String> {
    let (status, text) = http_get(metrics, "/metrics")?;
    let synced = |exchange: &str| {
        text.contains(&format!(
            "orderbook_venue_up{{exchange=\"{exchange}\",instrument=\"ETH/BTC\"}} 1"
        ))
    };
    (status == 200 && synced("binance") && synced("bitstamp")).then_some(text)
}

#[test]
fn every_metric_of_the_dashboard_and_the_alerts_is_exported() {
    let port = free_port();
    let _service = KillOnDrop(mergebook(port).spawn().unwrap());
    let metrics: SocketAddr = ([127, 0, 0, 1], port).into();
    let text = wait_until("both venues synced", Duration::from_secs(30), || {
        both_venues_synced(metrics)
    });
    let exported = exported_series(&text);

    let alerts = std::fs::read_to_string(Path::new(REPO).join("deploy/prometheus/alerts.yml"));
    let referenced_by_alerts = metric_names(&alerts.unwrap());
    let referenced_by_dashboard = metric_names(&dashboard_queries().join("\n"));
    assert!(referenced_by_alerts.len() >= 6, "{referenced_by_alerts:?}");
    assert!(
        referenced_by_dashboard.len() >= 9,
        "{referenced_by_dashboard:?}"
    );
    for name in referenced_by_alerts.iter().chain(&referenced_by_dashboard) {
        assert!(
            exported.contains(name),
            "{name} is used by the dashboard or the alerts but not exported; exported: {exported:?}"
        );
    }
}

/// The dashboard's queries are valid PromQL: promtool checks them as recording rules.
#[test]
fn the_dashboard_queries_parse() {
    let Some(promtool) = tool("promtool", "prometheus") else {
        return;
    };
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (index, query) in dashboard_queries().iter().enumerate() {
        // Grafana's variable, as Grafana would substitute it.
        let query = query.replace("$__rate_interval", "1m");
        rules += &format!("      - record: dashboard_query_{index}\n        expr: {query:?}\n");
    }
    let path = std::env::temp_dir().join(format!("mergebook-dashboard-{}.yml", std::process::id()));
    std::fs::write(&path, rules).unwrap();
    let output = Command::new(promtool)
        .args(["check", "rules"])
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Percent-encodes a query-string value.
fn url_encode(value: &str) -> String {
    value
        .bytes()
        .map(|byte| match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// The numbers of an instant query's result, one per series.
fn query(prometheus: SocketAddr, promql: &str) -> Option<Vec<f64>> {
    let (status, body) = http_get(
        prometheus,
        &format!("/api/v1/query?query={}", url_encode(promql)),
    )?;
    if status == 503 {
        return None; // still starting (its TSDB not ready yet): ask again
    }
    assert_eq!(status, 200, "{promql}: {body}");
    let response: Value = serde_json::from_str(&body).unwrap();
    let values: Vec<f64> = response["data"]["result"]
        .as_array()?
        .iter()
        .map(|series| series["value"][1].as_str().unwrap().parse().unwrap())
        .collect();
    Some(values)
}

#[test]
fn a_real_prometheus_scrapes_mergebook_and_answers_queries() {
    let Some(prometheus_binary) = tool("prometheus", "prometheus") else {
        return;
    };
    let mergebook_port = free_port();
    let _service = KillOnDrop(
        mergebook(mergebook_port)
            .args(["--simulator-rate", "200", "--output", "none"])
            .spawn()
            .unwrap(),
    );

    let directory =
        std::env::temp_dir().join(format!("mergebook-prometheus-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let config = directory.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: mergebook\n    \
             static_configs:\n      - targets: [\"127.0.0.1:{mergebook_port}\"]\n"
        ),
    )
    .unwrap();
    let prometheus_port = free_port();
    let _prometheus = KillOnDrop(
        Command::new(prometheus_binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                directory.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prometheus_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let prometheus: SocketAddr = ([127, 0, 0, 1], prometheus_port).into();

    // Two scrapes with traffic between them give rates; allow for start-up.
    let limit = Duration::from_secs(60);
    let p99 = wait_until("the e2e P99 through Prometheus", limit, || {
        let values = query(
            prometheus,
            "histogram_quantile(0.99, rate(orderbook_e2e_duration_seconds_bucket[1m]))",
        )?;
        values.first().copied().filter(|p99| p99.is_finite())
    });
    assert!(p99 > 0.0 && p99 < 1.0, "P99 {p99} s");
    let messages_per_second = wait_until("message rates per exchange", limit, || {
        let rates = query(prometheus, "rate(orderbook_messages_total[1m])")?;
        // config/sim.toml merges every venue.
        let every_venue = rates.len() == mergebook::venue::VenueId::ALL.len();
        (every_venue && rates.iter().all(|rate| *rate > 0.0)).then_some(rates)
    });
    let up = query(prometheus, r#"up{job="mergebook"}"#).unwrap();
    assert_eq!(up, [1.0], "the scrape target is up");
    let merges = query(prometheus, "orderbook_merges_total").unwrap();
    assert!(merges[0] > 0.0, "{merges:?}");
    eprintln!("through Prometheus: e2e P99 {p99} s, messages/s {messages_per_second:?}");
    let _ = std::fs::remove_dir_all(&directory);
}

/// The process needs no root (docs/reliability.md): the image's final user is `nonroot`,
/// the unit runs as a dynamic user with no capabilities and no way to gain privileges.
#[test]
fn neither_the_image_nor_the_unit_runs_as_root() {
    let file = |path: &str| std::fs::read_to_string(Path::new(REPO).join(path)).unwrap();
    let dockerfile = file("Dockerfile");
    let final_user = dockerfile
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("USER "));
    assert_eq!(final_user.map(str::trim), Some("nonroot"));
    let unit = file("deploy/systemd/mergebook.service");
    for setting in [
        "DynamicUser=yes",
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=",
        "AmbientCapabilities=",
    ] {
        assert!(
            unit.lines().any(|line| line.trim() == setting),
            "{setting} missing from the unit"
        );
    }
}
