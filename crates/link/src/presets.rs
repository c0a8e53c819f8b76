//! Presets (stub).
use crate::{LinkError, LinkSpec};
/// Looks up a preset.
pub fn lookup(name: &str) -> Result<LinkSpec, LinkError> {
    Err(LinkError::UnknownPreset {
        name: name.into(),
        valid: String::new(),
    })
}
/// Table.
pub fn table() -> String {
    String::new()
}
