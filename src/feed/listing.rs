//! The venues' listings, asked before any connection, where a venue drops a whole
//! connection, every other subscription on it included, over a name it does not list
//! (Hyperliquid, which says nothing first): such a name in the configuration stops the
//! service before it connects, as a configuration error does.

use crate::config::Config;
use crate::venue::VenueId;
use std::time::Duration;

/// A configured symbol the venue does not list, or a listing that could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ListingError {
    #[error(
        "instruments[{instrument}].symbols.{venue} = {symbol:?}: {venue} does not list it \
         ({url}); subscribing to it would drop the connection and every book on it"
    )]
    Unlisted {
        instrument: usize,
        venue: VenueId,
        symbol: String,
        url: String,
    },
    #[error("{venue}: its listing ({url}) could not be read: {why}")]
    Unread {
        venue: VenueId,
        url: String,
        why: String,
    },
}

/// Asks each venue with a listing (`VenueConfig::listing_url`) about the symbols the
/// configuration names on it. The first symbol it does not list is an error; a listing
/// that cannot be read (the venue unreachable, an answer of another shape) is returned
/// beside, for the caller to report: the names were then checked by their form only
/// (`Streams::check_symbol`), and the service runs.
pub async fn check(config: &Config, timeout: Duration) -> Result<Vec<ListingError>, ListingError> {
    let mut unread = Vec::new();
    for venue in &config.venues {
        let Some(url) = &venue.listing_url else {
            continue;
        };
        let symbols: Vec<(usize, &str)> = config
            .instruments
            .iter()
            .enumerate()
            .flat_map(|(index, instrument)| {
                instrument
                    .symbols
                    .iter()
                    .filter(|(on, _)| *on == venue.venue)
                    .map(move |(_, symbol)| (index, symbol.as_str()))
            })
            .collect();
        if symbols.is_empty() {
            continue;
        }
        let names: Vec<&str> = symbols.iter().map(|&(_, symbol)| symbol).collect();
        match listed(venue.venue, url, &names, timeout).await {
            Ok(listed) => {
                let unlisted = symbols
                    .iter()
                    .find(|(_, symbol)| !listed.iter().any(|name| name == symbol));
                if let Some(&(instrument, symbol)) = unlisted {
                    return Err(ListingError::Unlisted {
                        instrument,
                        venue: venue.venue,
                        symbol: symbol.to_owned(),
                        url: url.clone(),
                    });
                }
            }
            Err(why) => unread.push(ListingError::Unread {
                venue: venue.venue,
                url: url.clone(),
                why,
            }),
        }
    }
    Ok(unread)
}

/// Every name `venue`'s listing at `url` gives for the parts `symbols` are in.
async fn listed(
    venue: VenueId,
    url: &str,
    symbols: &[&str],
    timeout: Duration,
) -> Result<Vec<String>, String> {
    let client = reqwest::Client::builder()
        .connect_timeout(timeout)
        .timeout(timeout)
        .user_agent(concat!("mergebook/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| error.to_string())?;
    let mut names = Vec::new();
    for request in venue.streams().listing_requests(symbols) {
        let response = client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(request.clone())
            .send()
            .await
            .map_err(|error| error.to_string())?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("HTTP {status} to {request}"));
        }
        let body = response.bytes().await.map_err(|error| error.to_string())?;
        names.extend(venue.streams().listed_names(&request, &body)?);
    }
    Ok(names)
}
