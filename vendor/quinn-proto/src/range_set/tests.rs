use std::ops::Range;

use super::*;

macro_rules! common_set_tests {
    ($set_name:ident, $set_type:ident) => {
        mod $set_name {
            use super::*;

            #[test]
            fn merge_and_split() {
                let mut set = $set_type::new();
                assert!(set.insert(0..2));
                assert!(set.insert(2..4));
                assert!(!set.insert(1..3));
                assert_eq!(set.len(), 1);
                assert_eq!(&set.elts().collect::<Vec<_>>()[..], [0, 1, 2, 3]);
                assert!(!set.contains(4));
                assert!(set.remove(2..3));
                assert_eq!(set.len(), 2);
                assert!(!set.contains(2));
                assert_eq!(&set.elts().collect::<Vec<_>>()[..], [0, 1, 3]);
            }

            #[test]
            fn double_merge_exact() {
                let mut set = $set_type::new();
                assert!(set.insert(0..2));
                assert!(set.insert(4..6));
                assert_eq!(set.len(), 2);
                assert!(set.insert(2..4));
                assert_eq!(set.len(), 1);
                assert_eq!(&set.elts().collect::<Vec<_>>()[..], [0, 1, 2, 3, 4, 5]);
            }

            #[test]
            fn single_merge_low() {
                let mut set = $set_type::new();
                assert!(set.insert(0..2));
                assert!(set.insert(4..6));
                assert_eq!(set.len(), 2);
                assert!(set.insert(2..3));
                assert_eq!(set.len(), 2);
                assert_eq!(&set.elts().collect::<Vec<_>>()[..], [0, 1, 2, 4, 5]);
            }

            #[test]
            fn single_merge_high() {
                let mut set = $set_type::new();
                assert!(set.insert(0..2));
                assert!(set.insert(4..6));
                assert_eq!(set.len(), 2);
                assert!(set.insert(3..4));
                assert_eq!(set.len(), 2);
                assert_eq!(&set.elts().collect::<Vec<_>>()[..], [0, 1, 3, 4, 5]);
            }

            #[test]
            fn double_merge_wide() {
                let mut set = $set_type::new();
                assert!(set.insert(0..2));
                assert!(set.insert(4..6));
                assert_eq!(set.len(), 2);
                assert!(set.insert(1..5));
                assert_eq!(set.len(), 1);
                assert_eq!(&set.elts().collect::<Vec<_>>()[..], [0, 1, 2, 3, 4, 5]);
            }

            #[test]
            fn double_remove() {
                let mut set = $set_type::new();
                assert!(set.insert(0..2));
                assert!(set.insert(4..6));
                assert!(set.remove(1..5));
                assert_eq!(set.len(), 2);
                assert_eq!(&set.elts().collect::<Vec<_>>()[..], [0, 5]);
            }

            #[test]
            fn insert_multiple() {
                let mut set = $set_type::new();
                assert!(set.insert(0..1));
                assert!(set.insert(2..3));
                assert!(set.insert(4..5));
                assert!(set.insert(0..5));
                assert_eq!(set.len(), 1);
            }

            #[test]
            fn remove_multiple() {
                let mut set = $set_type::new();
                assert!(set.insert(0..1));
                assert!(set.insert(2..3));
                assert!(set.insert(4..5));
                assert!(set.remove(0..5));
                assert!(set.is_empty());
            }

            #[test]
            fn double_insert() {
                let mut set = $set_type::new();
                assert!(set.insert(0..2));
                assert!(!set.insert(0..2));
                assert!(set.insert(2..4));
                assert!(!set.insert(2..4));
                assert!(!set.insert(0..4));
                assert!(!set.insert(1..2));
                assert!(!set.insert(1..3));
                assert!(!set.insert(1..4));
                assert_eq!(set.len(), 1);
            }

            #[test]
            fn skip_empty_ranges() {
                let mut set = $set_type::new();
                assert!(!set.insert(2..2));
                assert_eq!(set.len(), 0);
                assert!(!set.insert(4..4));
                assert_eq!(set.len(), 0);
                assert!(!set.insert(0..0));
                assert_eq!(set.len(), 0);
            }

            #[test]
            fn compare_insert_to_reference() {
                const MAX_RANGE: u64 = 50;

                for start in 0..=MAX_RANGE {
                    for end in 0..=MAX_RANGE {
                        println!("insert({}..{})", start, end);
                        let (mut set, mut reference) = create_initial_sets(MAX_RANGE);
                        assert_eq!(set.insert(start..end), reference.insert(start..end));
                        assert_sets_equal(&set, &reference);
                    }
                }
            }

            #[test]
            fn compare_remove_to_reference() {
                const MAX_RANGE: u64 = 50;

                for start in 0..=MAX_RANGE {
                    for end in 0..=MAX_RANGE {
                        println!("remove({}..{})", start, end);
                        let (mut set, mut reference) = create_initial_sets(MAX_RANGE);
                        assert_eq!(set.remove(start..end), reference.remove(start..end));
                        assert_sets_equal(&set, &reference);
                    }
                }
            }

            #[test]
            fn min_max() {
                let mut set = $set_type::new();
                set.insert(1..3);
                set.insert(4..5);
                set.insert(6..10);
                assert_eq!(set.min(), Some(1));
                assert_eq!(set.max(), Some(9));
            }

            fn create_initial_sets(max_range: u64) -> ($set_type, RefRangeSet) {
                let mut set = $set_type::new();
                let mut reference = RefRangeSet::new(max_range as usize);
                assert_sets_equal(&set, &reference);

                assert_eq!(set.insert(2..6), reference.insert(2..6));
                assert_eq!(set.insert(10..14), reference.insert(10..14));
                assert_eq!(set.insert(14..14), reference.insert(14..14));
                assert_eq!(set.insert(18..19), reference.insert(18..19));
                assert_eq!(set.insert(20..21), reference.insert(20..21));
                assert_eq!(set.insert(22..24), reference.insert(22..24));
                assert_eq!(set.insert(26..30), reference.insert(26..30));
                assert_eq!(set.insert(34..38), reference.insert(34..38));
                assert_eq!(set.insert(42..44), reference.insert(42..44));

                assert_sets_equal(&set, &reference);

                (set, reference)
            }

            fn assert_sets_equal(set: &$set_type, reference: &RefRangeSet) {
                assert_eq!(set.len(), reference.len());
                assert_eq!(set.is_empty(), reference.is_empty());
                assert_eq!(set.elts().collect::<Vec<_>>()[..], reference.elts()[..]);
            }
        }
    };
}

common_set_tests!(range_set, RangeSet);
common_set_tests!(array_range_set, ArrayRangeSet);

/// A very simple reference implementation of a RangeSet
struct RefRangeSet {
    data: Vec<bool>,
}

impl RefRangeSet {
    fn new(capacity: usize) -> Self {
        Self {
            data: vec![false; capacity],
        }
    }

    fn len(&self) -> usize {
        let mut last = false;
        let mut count = 0;

        for v in self.data.iter() {
            if !last && *v {
                count += 1;
            }
            last = *v;
        }

        count
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn insert(&mut self, x: Range<u64>) -> bool {
        let mut result = false;

        assert!(x.end <= self.data.len() as u64);

        for i in x {
            let i = i as usize;
            if !self.data[i] {
                result = true;
                self.data[i] = true;
            }
        }

        result
    }

    fn remove(&mut self, x: Range<u64>) -> bool {
        let mut result = false;

        assert!(x.end <= self.data.len() as u64);

        for i in x {
            let i = i as usize;
            if self.data[i] {
                result = true;
                self.data[i] = false;
            }
        }

        result
    }

    fn elts(&self) -> Vec<u64> {
        self.data
            .iter()
            .enumerate()
            .filter_map(|(i, e)| if *e { Some(i as u64) } else { None })
            .collect()
    }
}

/// satquic patch 9: `ArrayRangeSet::insert` takes a short cut at the last range; the ranges
/// it leaves must be those of the full scan (quinn-proto 0.11.19's `insert`, kept here as
/// the reference), for inserts in order, with gaps, out of order and overlapping.
#[test]
fn array_range_set_insert_short_cut_keeps_the_scan_result() {
    /// quinn-proto 0.11.19's `ArrayRangeSet::insert`, on a plain vector.
    fn insert_by_scan(set: &mut Vec<Range<u64>>, x: Range<u64>) -> bool {
        let mut result = false;
        if x.is_empty() {
            return false;
        }
        let mut idx = 0;
        while idx != set.len() {
            let range = &mut set[idx];
            if range.start > x.end {
                set.insert(idx, x);
                return true;
            } else if range.start > x.start {
                result = true;
                range.start = x.start;
            }
            if x.end <= range.end {
                return result;
            } else if x.start <= range.end {
                range.end = x.end;
                while idx != set.len() - 1 {
                    let curr = set[idx].clone();
                    let next = set[idx + 1].clone();
                    if curr.end >= next.start {
                        set[idx].end = next.end.max(curr.end);
                        set.remove(idx + 1);
                    } else {
                        break;
                    }
                }
                return true;
            }
            idx += 1;
        }
        set.push(x);
        true
    }

    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    for round in 0..200 {
        let mut set = ArrayRangeSet::new();
        let mut reference = Vec::new();
        let mut pn = 0;
        for step in 0..300 {
            // Mostly the next packet number, sometimes a gap (a loss), sometimes an
            // earlier one (reordering) or a wide range over several ranges.
            let x = match next() % 10 {
                0..=5 => pn..pn + 1,
                6 => pn + 1 + next() % 5..pn + 2 + next() % 5,
                7 => {
                    let s = next() % (pn + 1);
                    s..s + 1
                }
                8 => {
                    let s = next() % (pn + 1);
                    s..s + next() % 12
                }
                _ => pn..pn,
            };
            pn = pn.max(x.end);
            let got = set.insert(x.clone());
            let want = insert_by_scan(&mut reference, x.clone());
            assert_eq!(got, want, "round {round} step {step}: insert {x:?}");
            assert_eq!(
                set.iter().collect::<Vec<_>>(),
                reference,
                "round {round} step {step}: insert {x:?}"
            );
        }
    }
}

/// satquic patch 9: `RangeSet::insert` takes a short cut at the last range; the map it
/// leaves must be that of the two searches (quinn-proto 0.11.19's `insert`, kept here as
/// the reference).
#[test]
fn range_set_insert_short_cut_keeps_the_search_result() {
    use std::collections::BTreeMap;
    use std::ops::Bound::{Excluded, Included};

    /// quinn-proto 0.11.19's `RangeSet::insert`, on a plain map.
    fn insert_by_search(set: &mut BTreeMap<u64, u64>, mut x: Range<u64>) -> bool {
        if x.is_empty() {
            return false;
        }
        let pred = |set: &BTreeMap<u64, u64>, x: u64| {
            set.range((Included(0), Included(x)))
                .next_back()
                .map(|(&s, &e)| (s, e))
        };
        let succ = |set: &BTreeMap<u64, u64>, x: u64| {
            set.range((Excluded(x), Included(u64::MAX)))
                .next()
                .map(|(&s, &e)| (s, e))
        };
        if let Some((start, end)) = pred(set, x.start) {
            if end >= x.end {
                return false;
            } else if end >= x.start {
                set.remove(&start);
                x.start = start;
            }
        }
        while let Some((next_start, next_end)) = succ(set, x.start) {
            if next_start > x.end {
                break;
            }
            set.remove(&next_start);
            x.end = x.end.max(next_end);
        }
        set.insert(x.start, x.end);
        true
    }

    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    for round in 0..200 {
        let mut set = RangeSet::new();
        let mut reference = BTreeMap::new();
        let mut offset = 0;
        for step in 0..300 {
            // Mostly the next chunk, sometimes after a gap, sometimes a retransmission of
            // earlier data or a range over several others.
            let len = 1 + next() % 40;
            let x = match next() % 10 {
                0..=5 => offset..offset + len,
                6 => offset + 1 + next() % 50..offset + 60 + next() % 50,
                7 => {
                    let s = next() % (offset + 1);
                    s..s + len
                }
                8 => {
                    let s = next() % (offset + 1);
                    s..s + next() % 200
                }
                _ => offset..offset,
            };
            offset = offset.max(x.end);
            let got = set.insert(x.clone());
            let want = insert_by_search(&mut reference, x.clone());
            assert_eq!(got, want, "round {round} step {step}: insert {x:?}");
            assert_eq!(
                set.iter().collect::<Vec<_>>(),
                reference.iter().map(|(&s, &e)| s..e).collect::<Vec<_>>(),
                "round {round} step {step}: insert {x:?}"
            );
        }
    }
}

/// satquic patch 9: `RangeSet::replace` skips its searches when the new range starts at or
/// after the last one. Checked against a model of single values: `replace` yields the
/// parts of the new range that were already in the set, in order and maximal, and leaves
/// the union, for in-order, gapped, repeated and overlapping ranges.
#[test]
fn range_set_replace_yields_the_overlaps_and_keeps_the_union() {
    use std::collections::BTreeSet;

    let mut state = 0x5851_f42d_4c95_7f2d_u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    // Maximal runs of consecutive values.
    let runs = |values: &mut dyn Iterator<Item = u64>| {
        let mut out: Vec<Range<u64>> = Vec::new();
        for v in values {
            match out.last_mut() {
                Some(last) if last.end == v => last.end = v + 1,
                _ => out.push(v..v + 1),
            }
        }
        out
    };
    for round in 0..100 {
        let mut set = RangeSet::new();
        let mut model = BTreeSet::new();
        let mut offset = 0;
        for step in 0..150 {
            let len = next() % 30;
            let x = match next() % 10 {
                0..=5 => offset..offset + len,
                6 => offset + 1 + next() % 40..offset + 50 + next() % 40,
                _ => {
                    let s = next() % (offset + 1);
                    s..s + next() % 120
                }
            };
            offset = offset.max(x.end);
            let want = runs(&mut x.clone().filter(|v| model.contains(v)));
            let got = set.replace(x.clone()).collect::<Vec<_>>();
            assert_eq!(got, want, "round {round} step {step}: replace {x:?}");
            model.extend(x.clone());
            assert_eq!(
                set.iter().collect::<Vec<_>>(),
                runs(&mut model.iter().copied()),
                "round {round} step {step}: replace {x:?}"
            );
        }
    }
}
