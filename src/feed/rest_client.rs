//! The REST client of the diff-mode books' snapshots and the venues' token requests:
//! reqwest over rustls, with timeouts.
//! When to ask is the core's (`feed/core/snapshot_schedule.rs`).

use crate::feed::core::snapshot_schedule::FetchOutcome;
use std::time::Duration;

/// Why a snapshot could not be had.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("HTTP {status}; retry after {retry_after:?}")]
    RateLimited {
        status: u16,
        retry_after: Option<Duration>,
    },
    #[error("HTTP {0}")]
    Status(u16),
    #[error(transparent)]
    Http(#[from] reqwest::Error),
}

impl FetchError {
    /// How this error ends the request, as far as the schedule is concerned.
    pub fn outcome(&self) -> FetchOutcome {
        match self {
            FetchError::RateLimited { retry_after, .. } => FetchOutcome::RateLimited {
                retry_after: *retry_after,
            },
            FetchError::Status(_) | FetchError::Http(_) => FetchOutcome::Failed,
        }
    }
}

/// The REST client of one reader: one connection pool, rustls with the webpki roots
/// (certificates verified; there is no switch to turn that off), a connect timeout and a
/// timeout on the whole request.
#[derive(Clone)]
pub struct SnapshotClient {
    http: reqwest::Client,
}

impl SnapshotClient {
    pub fn new(timeout: Duration) -> Result<SnapshotClient, reqwest::Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .timeout(timeout)
            .user_agent(concat!("mergebook/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(SnapshotClient { http })
    }

    /// GETs `url` with `headers` (a signed request's, or none); the body of a 200, or why
    /// not. `Retry-After` is read in its delta-seconds form (what Binance sends).
    pub async fn fetch(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
    ) -> Result<Vec<u8>, FetchError> {
        let mut request = self.http.get(url);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        Self::body(request.send().await?).await
    }

    /// POSTs an empty body to `url` (a venue's token request); answered as [`Self::fetch`].
    pub async fn post(&self, url: &str) -> Result<Vec<u8>, FetchError> {
        Self::body(self.http.post(url).send().await?).await
    }

    async fn body(response: reqwest::Response) -> Result<Vec<u8>, FetchError> {
        let status = response.status().as_u16();
        match status {
            200 => Ok(response.bytes().await?.to_vec()),
            429 | 418 => {
                let retry_after = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|value| value.to_str().ok()?.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                Err(FetchError::RateLimited {
                    status,
                    retry_after,
                })
            }
            _ => Err(FetchError::Status(status)),
        }
    }
}
