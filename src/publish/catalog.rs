//! The instruments the service publishes, and where each one's summaries are read: fixed
//! at start, changed by a reload (`Service::reload`). Consumers find an instrument here by
//! its name, or serve every one listed, rather than by its place in the configuration,
//! which a reload changes.

use crate::config::Instrument;
use crate::merger::summary::Summary;
use std::sync::Arc;
use tokio::sync::watch;

/// One instrument published.
#[derive(Clone)]
pub struct Listed {
    /// Its index in the merger and in its summaries (`Summary::instrument`), kept while it
    /// is listed.
    pub slot: usize,
    pub instrument: Arc<Instrument>,
    /// Its latest summary; the channel closes when a reload delists it.
    pub summaries: watch::Receiver<Arc<Summary>>,
}

/// The instruments published, in the configuration's order.
#[derive(Clone, Default)]
pub struct Listing {
    listed: Vec<Listed>,
}

/// The consumers' view of the listing: the current one (`borrow`), and each change
/// (`changed`).
pub type Catalog = watch::Receiver<Arc<Listing>>;

impl Listing {
    pub fn new(listed: Vec<Listed>) -> Listing {
        Listing { listed }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Listed> {
        self.listed.iter()
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Listed> {
        self.listed.iter_mut()
    }

    /// The instrument named `name`.
    pub fn find(&self, name: &str) -> Option<&Listed> {
        self.listed
            .iter()
            .find(|listed| listed.instrument.name == name)
    }

    /// The instrument in `slot`.
    pub fn in_slot(&self, slot: usize) -> Option<&Listed> {
        self.listed.iter().find(|listed| listed.slot == slot)
    }

    /// The first instrument of the configuration: what a request naming none asks for.
    pub fn first(&self) -> Option<&Listed> {
        self.listed.first()
    }
}

/// A catalog that never changes (its channel closed), of `instruments` and their
/// `summaries` in slot order: what a consumer is tested with.
pub fn fixed(instruments: &[Instrument], summaries: &[watch::Receiver<Arc<Summary>>]) -> Catalog {
    let listed = (instruments.iter().zip(summaries).enumerate())
        .map(|(slot, (instrument, summaries))| Listed {
            slot,
            instrument: Arc::new(instrument.clone()),
            summaries: summaries.clone(),
        })
        .collect();
    // Its sender dropped: consumers see that no change will come.
    watch::channel(Arc::new(Listing::new(listed))).1
}
