//! Coinbase Exchange's diff books: sequencing, snapshots and checksum ([`Sequencing`], [`Snapshots`], [`Checksum`]).

use super::*;

impl Checksum for CoinbaseExchange {}

impl Snapshots for CoinbaseExchange {
    /// The Exchange REST book, level 2 (whole, aggregated): what audits the books (their
    /// snapshots come on the WebSocket).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, _limit: usize) -> String {
        format!("{rest_base}/products/{symbol}/book?level=2")
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        let path = url.split('?').next()?;
        let (_, rest) = path.split_once("/products/")?;
        let product = rest.strip_suffix("/book")?;
        (!product.is_empty() && !product.contains('/')).then(|| product.to_owned())
    }

    /// `level2_batch` has no sequence: a lost update cannot be seen.
    fn audited(&self) -> bool {
        true
    }
}
