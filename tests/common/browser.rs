//! A real headless Chromium (Debian's `chromium`), driven over its DevTools protocol (a
//! WebSocket of JSON commands): a page as a user's browser runs it, read through
//! JavaScript evaluated in it.

use super::KillOnDrop;
use futures_util::{SinkExt, StreamExt};
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

const WAIT: Duration = Duration::from_secs(30);

/// The DevTools protocol's name for the id of a page's attachment (its wire key).
const ATTACHMENT_KEY: &str = "sessionId";

pub struct Browser {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// The id the browser gave the page's attachment to this connection, which each
    /// command to the page names (under `ATTACHMENT_KEY`).
    page: String,
    next_id: u64,
    profile: std::path::PathBuf,
    _process: KillOnDrop,
}

impl Browser {
    /// Chromium with one page at `url`; `None` (the test skips) where it is not
    /// installed, outside CI.
    pub async fn open(url: &str) -> Option<Browser> {
        let binary = super::tool("chromium", "chromium")?;
        let profile = std::env::temp_dir().join(format!(
            "mergebook-chromium-{}-{}",
            std::process::id(),
            super::free_port()
        ));
        let mut process = Command::new(binary)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--no-first-run",
                "--window-size=1300,900",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // It names its DevTools address on stderr; the rest of stderr is read and dropped,
        // so that a full pipe never stops it.
        let stderr = process.stderr.take().unwrap();
        let (found, address) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if let Some(at) = line.find("ws://") {
                    let _ = found.send(line[at..].trim().to_owned());
                }
            }
        });
        let process = KillOnDrop(process);
        let address = address
            .recv_timeout(WAIT)
            .expect("chromium names its DevTools address");
        let (socket, _) = tokio_tungstenite::connect_async(address.as_str())
            .await
            .unwrap();
        let mut browser = Browser {
            socket,
            page: String::new(),
            next_id: 0,
            profile,
            _process: process,
        };
        let target = browser
            .call("Target.createTarget", serde_json::json!({ "url": url }))
            .await;
        let attached = browser
            .call(
                "Target.attachToTarget",
                serde_json::json!({ "targetId": target["targetId"], "flatten": true }),
            )
            .await;
        browser.page = attached[ATTACHMENT_KEY].as_str().unwrap().to_owned();
        Some(browser)
    }

    /// One command (to the page once attached), and its result; the events
    /// that arrive meanwhile are dropped.
    async fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut command = serde_json::json!({ "id": id, "method": method, "params": params });
        if !self.page.is_empty() {
            command[ATTACHMENT_KEY] = self.page.clone().into();
        }
        self.socket
            .send(Message::text(command.to_string()))
            .await
            .unwrap();
        let answer = async {
            while let Some(message) = self.socket.next().await {
                let Ok(Message::Text(text)) = message else {
                    continue;
                };
                let mut answer: serde_json::Value = serde_json::from_str(&text).unwrap();
                if answer["id"] == id {
                    assert!(answer["error"].is_null(), "{method}: {answer}");
                    return answer["result"].take();
                }
            }
            panic!("chromium closed its DevTools connection");
        };
        tokio::time::timeout(WAIT, answer)
            .await
            .unwrap_or_else(|_| panic!("{method}: no answer within {WAIT:?}"))
    }

    /// The value of `expression` in the page, or what it threw.
    async fn evaluate(&mut self, expression: &str) -> Result<serde_json::Value, String> {
        let mut result = self
            .call(
                "Runtime.evaluate",
                serde_json::json!({ "expression": expression, "returnByValue": true }),
            )
            .await;
        match result["exceptionDetails"].take() {
            serde_json::Value::Null => Ok(result["result"]["value"].take()),
            thrown => Err(thrown["exception"]["description"].to_string()),
        }
    }

    /// The value of `expression` in the page; an exception it throws fails the test.
    pub async fn eval(&mut self, expression: &str) -> serde_json::Value {
        self.evaluate(expression)
            .await
            .unwrap_or_else(|thrown| panic!("{expression}: {thrown}"))
    }

    /// Evaluates `expression` until it is `true` (throwing counts as not yet: the page
    /// may still be loading), failing the test with the page's text after `WAIT`.
    pub async fn wait_for(&mut self, what: &str, expression: &str) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let value = self.evaluate(expression).await;
            if value == Ok(serde_json::Value::Bool(true)) {
                return;
            }
            if tokio::time::Instant::now() > deadline {
                let text = self.eval("document.body.innerText").await;
                panic!(
                    "{what}: not within {WAIT:?} (last {value:?}); the page:\n{}",
                    text.as_str().unwrap_or("")
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The page as a PNG.
    pub async fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine;
        let shot = self
            .call(
                "Page.captureScreenshot",
                serde_json::json!({ "format": "png" }),
            )
            .await;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
