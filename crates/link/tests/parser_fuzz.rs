//! Fuzz targets for the link crate's parsers (issue 32 item 10): link TOML and mahimahi
//! traces, from random text and from a valid input with a stretch replaced. Any input
//! gives a value or a one-line error, never a panic. The budget is PROPTEST_CASES
//! (scripts/fuzz-parsers.sh sets it); a failure proptest finds is kept in
//! parser_fuzz.proptest-regressions and replayed first on every run.

use proptest::prelude::*;
use satquic_link::{LinkSpec, MahimahiTrace, presets};

/// `base` with the bytes `at..at + len` (clamped, on character boundaries) replaced by
/// `with`: inputs near a valid one, which reach deeper than random text.
fn splice(base: &str, at: usize, len: usize, with: &str) -> String {
    let mut start = at % (base.len() + 1);
    while !base.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + len).min(base.len());
    while !base.is_char_boundary(end) {
        end += 1;
    }
    format!("{}{with}{}", &base[..start], &base[end..])
}

fn one_line(result: Result<impl Sized, impl std::fmt::Display>) -> Result<(), TestCaseError> {
    if let Err(e) = result {
        prop_assert!(!e.to_string().contains('\n'), "{e}");
    }
    Ok(())
}

proptest! {
    #[test]
    fn link_toml_from_random_text(text in "\\PC{0,300}") {
        one_line(LinkSpec::from_toml_str(&text))?;
    }

    #[test]
    fn link_toml_near_a_valid_one(preset in 0..presets::all().len(), at in any::<usize>(), len in 0usize..40, with in "[a-z0-9_=\"{}\\[\\],.\n -]{0,30}") {
        let valid = presets::all()[preset].to_toml_string().unwrap();
        one_line(LinkSpec::from_toml_str(&splice(&valid, at, len, &with)))?;
    }

    #[test]
    fn traces_from_random_text(text in "[0-9\n -]{0,300}|\\PC{0,100}") {
        one_line(MahimahiTrace::parse(&text, "fuzz"))?;
    }
}
