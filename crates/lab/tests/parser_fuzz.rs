//! Fuzz target for campaign specs (issue 32 item 10): random text and the repository's
//! campaigns with a stretch replaced give a spec or a one-line error, never a panic.
//! Budget: PROPTEST_CASES (scripts/fuzz-parsers.sh); failures are kept in
//! parser_fuzz.proptest-regressions and replayed first.

use proptest::prelude::*;
use satquic_lab::spec::CampaignSpec;

const CAMPAIGNS: &[&str] = &[
    include_str!("../campaigns/a-search-geo.toml"),
    include_str!("../campaigns/b-exit-classes.toml"),
    include_str!("../campaigns/b-receive-window.toml"),
];

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

fn one_line(text: &str) -> Result<(), TestCaseError> {
    if let Err(e) = CampaignSpec::from_toml_str(text, None) {
        prop_assert!(!e.to_string().contains('\n'), "{e}");
    }
    Ok(())
}

proptest! {
    #[test]
    fn campaign_specs_from_random_text(text in "\\PC{0,300}") {
        one_line(&text)?;
    }

    #[test]
    fn campaign_specs_near_a_valid_one(
        base in 0..CAMPAIGNS.len(),
        at in any::<usize>(),
        len in 0usize..40,
        with in "[a-z0-9_=\"{}\\[\\],.\n -]{0,30}",
    ) {
        one_line(&splice(CAMPAIGNS[base], at, len, &with))?;
    }
}
