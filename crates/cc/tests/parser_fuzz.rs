//! Fuzz target for congestion-control spec strings (issue 32 item 10): random text and
//! the satellite profile's spec with a stretch replaced give a configuration or a
//! one-line error, never a panic; a spec that parses writes back to one that parses to
//! the same. Budget: PROPTEST_CASES (scripts/fuzz-parsers.sh); failures are kept in
//! parser_fuzz.proptest-regressions and replayed first.

use proptest::prelude::*;
use satquic_cc::CongestionConfig;
use satquic_cc::profile::SATELLITE_CC;

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

fn check(text: &str) -> Result<(), TestCaseError> {
    match text.parse::<CongestionConfig>() {
        Err(e) => prop_assert!(!e.to_string().contains('\n'), "{text:?}: {e}"),
        Ok(config) => {
            let written = config.to_string();
            let again: CongestionConfig = written
                .parse()
                .map_err(|e| TestCaseError::fail(format!("{text:?} wrote {written:?}: {e}")))?;
            prop_assert_eq!(again.to_string(), written);
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn specs_from_random_text(text in "\\PC{0,80}|[a-z0-9+:,=.\\-]{0,80}") {
        check(&text)?;
    }

    #[test]
    fn specs_near_the_satellite_profile(
        at in any::<usize>(),
        len in 0usize..20,
        with in "[a-z0-9+:,=.\\-]{0,20}",
    ) {
        check(&splice(SATELLITE_CC, at, len, &with))?;
    }
}
