//! The canonical byte encoding shared by every entity.
//!
//! The encoding is borsh: fixed-width little-endian integers, `u32` length prefixes for
//! strings and sequences, `u8` tags for enums and options, fields in declaration order.
//! Decoding is strict: trailing bytes, invalid UTF-8, out-of-range tags and booleans
//! other than 0 and 1 are rejected by borsh, and every decoded value is then checked
//! against the invariants of its kind ([`Canonical::validate`]), so a decoded entity is
//! always one that cfs could have written.

use borsh::{BorshDeserialize, BorshSerialize};

use crate::error::CoreError;

/// An entity with one canonical byte encoding.
pub trait Canonical: BorshSerialize + BorshDeserialize + Sized {
    /// Human name of the kind, used in errors ("chunk", "document", ...).
    const KIND: &'static str;

    /// Checks every invariant the spec puts on this kind that can be checked from the
    /// value alone (derived ids and hashes, bounds, orderings).
    fn validate(&self) -> Result<(), CoreError>;

    /// The canonical encoding.
    ///
    /// # Panics
    /// Only if a string or sequence is longer than `u32::MAX`, which [`Self::validate`]
    /// rules out for every kind.
    fn encode(&self) -> Vec<u8> {
        borsh::to_vec(self).expect("canonical encoding of a value within spec bounds")
    }

    /// Decodes the canonical encoding strictly and validates the result.
    fn decode(bytes: &[u8]) -> Result<Self, CoreError> {
        let value = borsh::from_slice::<Self>(bytes).map_err(|e| CoreError::Malformed {
            kind: Self::KIND,
            reason: e.to_string(),
        })?;
        value.validate()?;
        Ok(value)
    }
}

/// Fails with `Invalid` for `kind` when `len` is over `max`.
pub(crate) fn check_len(
    kind: &'static str,
    field: &str,
    len: usize,
    max: usize,
) -> Result<(), CoreError> {
    if len > max {
        return Err(CoreError::invalid(
            kind,
            format!("{field} is {len} long, over the limit of {max}"),
        ));
    }
    Ok(())
}
