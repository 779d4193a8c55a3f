//! The vector readers' stand-ins for builds without AVX2: the same names, reading nothing.
//! Each declines at once and inlines to nothing, so the walker's scalar paths read every
//! level; the side skip is the two-pass one.

use crate::book::Level;

/// The stand-ins look at no bytes ahead.
pub(in crate::json) const READ_AHEAD: usize = 0;

/// No level start is looked for, so none needs room after the last.
pub(in crate::json) const STARTS_SLACK: usize = 0;

#[inline(always)]
pub(in crate::json) fn compact_level(
    _window: &[u8; READ_AHEAD],
) -> Option<(Level, usize, Option<LevelPattern>)> {
    None
}

/// A pattern that matches nothing.
#[derive(Debug, Clone, Copy)]
pub(in crate::json) struct LevelPattern {
    pub(in crate::json) len: usize,
}

impl LevelPattern {
    pub(in crate::json) fn none() -> LevelPattern {
        LevelPattern { len: 0 }
    }

    #[inline(always)]
    pub(in crate::json) fn read(&self, _window: &[u8; READ_AHEAD]) -> PatternRead {
        PatternRead::Other
    }
}

/// What the AVX2 reader's patterns make of a level; here always `Other`.
#[expect(
    dead_code,
    reason = "the AVX2 reader's outcomes, never made without it"
)]
pub(in crate::json) enum PatternRead {
    Same(Level),
    NewAmount(Level, usize, Option<LevelPattern>),
    Other,
}

/// No pattern is kept.
pub(in crate::json) struct KeptPatterns;

impl KeptPatterns {
    #[inline(always)]
    pub(in crate::json) fn with<R>(read: impl FnOnce(&KeptPatterns) -> R) -> R {
        read(&KeptPatterns)
    }

    #[inline(always)]
    pub(in crate::json) fn remember(_pattern: &LevelPattern) {}

    #[inline(always)]
    pub(in crate::json) fn read(&self, _window: &[u8; READ_AHEAD], _len: usize) -> Option<Level> {
        None
    }
}

#[inline(always)]
pub(in crate::json) fn level_starts(
    _bytes: &[u8],
    _from: usize,
    _wanted: usize,
    _starts: &mut [u32],
) -> usize {
    0
}

#[inline]
pub(in crate::json) fn rest_of_side_len(rest: &[u8]) -> Option<usize> {
    super::super::side_skip::portable_rest_of_side_len(rest)
}
