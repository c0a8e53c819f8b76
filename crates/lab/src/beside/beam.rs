//! The busy beam (issue 38 item 1): many users fetching web-like objects over one GEO
//! bottleneck beside a few bulk flows, generated from the run's seed alone, so that two
//! variants that differ only in the bulk flows' controller see the same objects arrive at
//! the same times.
//!
//! A campaign asks for it with a workload of kind `beam`:
//!
//! ```toml
//! [[workload]]
//! kind = "beam"
//! duration = "60s"        # the window: objects arrive in it, bulk flows end at its end
//! beam = { users = 24, bulk = 3 }   # every other key has the default below
//! ```
//!
//! # The model
//!
//! - **Users** (`users`, default 24) are open-loop on/off sources: each alternates ON
//!   periods (exponential, mean `on`, default 2 s) and OFF periods (exponential, mean
//!   `off`, default 8 s), starting ON with probability on / (on + off); while ON it starts
//!   objects as a Poisson process of `objects_per_s` (default 1) per second, whether or
//!   not its earlier objects finished. User u's objects use controller `short_cc[u mod
//!   n]` (default `cubic`, `bbr3`, `newreno`, `satellite`). `off = "0s"` keeps every
//!   user on: each then starts objects as a steady Poisson process, as a responsiveness
//!   probe does (`campaigns/leo-responsiveness.toml`).
//! - **Objects** are downloads, each its own QUIC connection (handshake included in its
//!   completion time, as a browser's first request to a host), of a size drawn
//!   log-uniformly between `min_object` and `max_object` (default 100 kB and 5 MB: as
//!   many objects between 100 kB and 1 MB as between 1 and 10 MB would be; mean 1.25 MB).
//! - **Bulk flows** (`bulk`, default 3) take the variant's controller and start
//!   `bulk_stagger` apart (default 10 s) from 0; each is timed to end at the window's end.
//!
//! With the defaults the short flows offer 24 x 0.2 objects/s x 1.25 MB = 48 Mbit/s on
//! average, about 40 % of a 120 Mbit/s beam, and a 60 s window holds about 290 objects.
//!
//! The flows of a scenario are the bulk flows first (flow 0 to bulk - 1), then the objects
//! in order of their start (then user): the same seed gives the same list whatever the
//! variant, so object k of one variant is object k of the other.

use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use satquic_cc::CcSpec;
use satquic_link::units::duration_str;
use satquic_run::{DataDirection, FlowSpec, TransportSpec, Workload};
use serde::{Deserialize, Serialize};

use crate::plan::fnv1a;
use crate::spec::{SpecError, parse_size};

/// Most objects one beam scenario holds; a user process that would start more is cut
/// here (the spec check refuses parameters whose expected count comes near it).
pub const MAX_OBJECTS: usize = 2_000;

/// A `[[workload]]`'s `beam` table (see the module docs for the meaning and defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BeamSpec {
    pub users: u32,
    pub bulk: u32,
    #[serde(with = "duration_str")]
    pub bulk_stagger: Duration,
    /// Smallest and largest object, as sizes (`"100kB"`).
    pub min_object: String,
    pub max_object: String,
    #[serde(with = "duration_str")]
    pub on: Duration,
    #[serde(with = "duration_str")]
    pub off: Duration,
    pub objects_per_s: f64,
    pub short_cc: Vec<String>,
}

impl Default for BeamSpec {
    fn default() -> Self {
        BeamSpec {
            users: 24,
            bulk: 3,
            bulk_stagger: Duration::from_secs(10),
            min_object: "100kB".into(),
            max_object: "5MB".into(),
            on: Duration::from_secs(2),
            off: Duration::from_secs(8),
            objects_per_s: 1.0,
            short_cc: ["cubic", "bbr3", "newreno", "satellite"]
                .map(String::from)
                .to_vec(),
        }
    }
}

/// One object a user starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BeamObject {
    pub user: u32,
    pub start: Duration,
    pub bytes: u64,
}

impl BeamSpec {
    /// The object size range in bytes.
    pub fn object_range(&self) -> Result<(u64, u64), String> {
        let min = parse_size(&self.min_object).map_err(|e| format!("min_object: {e}"))?;
        let max = parse_size(&self.max_object).map_err(|e| format!("max_object: {e}"))?;
        if min == 0 || min > max {
            return Err(format!(
                "min_object ({min} bytes) must be above 0 and at most max_object ({max} bytes)"
            ));
        }
        Ok((min, max))
    }

    /// Checks the parameters against a window; errors name the key (`key: problem`).
    /// Returns `short_cc` parsed, for [`Self::flows`].
    pub fn check(&self, window: Duration) -> Result<Vec<CcSpec>, SpecError> {
        let bad = |key: &str, msg: String| SpecError(format!("beam.{key}: {msg}"));
        if self.users == 0 {
            return Err(bad("users", "must be at least 1".into()));
        }
        self.object_range()
            .map_err(|e| SpecError(format!("beam.{e}")))?;
        if self.on.is_zero() {
            return Err(bad(
                "on",
                "must be above 0 (off = \"0s\" keeps users on)".into(),
            ));
        }
        if !(self.objects_per_s.is_finite() && self.objects_per_s > 0.0) {
            return Err(bad(
                "objects_per_s",
                format!("{} must be a number above 0", self.objects_per_s),
            ));
        }
        if self.short_cc.is_empty() {
            return Err(bad("short_cc", "give at least one controller".into()));
        }
        let short_cc = self
            .short_cc
            .iter()
            .map(|cc| CcSpec::parse(cc).map_err(|e| bad("short_cc", e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        if self.bulk > 0 && self.bulk_stagger * (self.bulk - 1) >= window {
            return Err(bad(
                "bulk_stagger",
                "the last bulk flow would start after the window".into(),
            ));
        }
        let expected = self.expected_objects(window);
        if expected > MAX_OBJECTS as f64 / 2.0 {
            return Err(bad(
                "users",
                format!(
                    "about {expected:.0} objects expected in the window; at most {} are \
                     allowed (fewer users, a lower objects_per_s or a shorter window)",
                    MAX_OBJECTS / 2
                ),
            ));
        }
        Ok(short_cc)
    }

    /// The mean number of objects in a window: users x window x rate x on / (on + off).
    pub fn expected_objects(&self, window: Duration) -> f64 {
        let on = self.on.as_secs_f64();
        let duty = on / (on + self.off.as_secs_f64());
        f64::from(self.users) * window.as_secs_f64() * self.objects_per_s * duty
    }

    /// The objects of a window for `seed`, in order of start (then user).
    pub fn objects(&self, window: Duration, seed: u64) -> Vec<BeamObject> {
        let (min, max) = self.object_range().unwrap_or((1, 1));
        let mut all: Vec<BeamObject> = (0..self.users)
            .flat_map(|user| self.user_objects(user, window, seed, (min, max)))
            .collect();
        all.sort_by_key(|o| (o.start, o.user));
        all.truncate(MAX_OBJECTS);
        all
    }

    /// One user's objects: its on/off process from its own generator.
    fn user_objects(
        &self,
        user: u32,
        window: Duration,
        seed: u64,
        (min, max): (u64, u64),
    ) -> Vec<BeamObject> {
        let mut rng = ChaCha8Rng::seed_from_u64(fnv1a(format!("beam:{seed}:{user}").as_bytes()));
        let (on, off) = (self.on.as_secs_f64(), self.off.as_secs_f64());
        let end = window.as_secs_f64();
        let mut out = Vec::new();
        let mut t = 0.0;
        let mut is_on = rng.random_bool(on / (on + off));
        while t < end && out.len() < MAX_OBJECTS {
            if !is_on {
                // With off = 0 the user turns straight back on: always on.
                t += exponential(&mut rng, off);
                is_on = true;
                continue;
            }
            let period_end = (t + exponential(&mut rng, on)).min(end);
            loop {
                t += exponential(&mut rng, 1.0 / self.objects_per_s);
                if t >= period_end {
                    break;
                }
                out.push(BeamObject {
                    user,
                    start: Duration::from_secs_f64(t),
                    bytes: log_uniform(&mut rng, min, max),
                });
            }
            t = period_end;
            is_on = false;
        }
        out
    }

    /// The scenario's flows: the bulk flows with `bulk` (flow i gets `bulk(i)`), then the
    /// objects, user u's with `short(u mod n)`, n the number of `short_cc`.
    pub fn flows(
        &self,
        window: Duration,
        seed: u64,
        bulk: impl Fn(u32) -> TransportSpec,
        short: impl Fn(usize) -> TransportSpec,
    ) -> Vec<FlowSpec> {
        let bulk_flows = (0..self.bulk).map(|i| {
            let start = self.bulk_stagger * i;
            FlowSpec {
                start,
                transport: bulk(i),
                workload: Workload::Timed {
                    duration: window.saturating_sub(start),
                },
                direction: DataDirection::Download,
            }
        });
        let objects = self.objects(window, seed).into_iter().map(|o| FlowSpec {
            start: o.start,
            transport: short(o.user as usize % self.short_cc.len()),
            workload: Workload::Download { bytes: o.bytes },
            direction: DataDirection::Download,
        });
        bulk_flows.chain(objects).collect()
    }
}

/// An exponential draw of mean `mean` (seconds).
fn exponential(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    let u: f64 = rng.random();
    -mean * (1.0_f64 - u).ln()
}

/// A size drawn log-uniformly in `[min, max]` bytes.
fn log_uniform(rng: &mut ChaCha8Rng, min: u64, max: u64) -> u64 {
    let u: f64 = rng.random();
    let (lo, hi) = ((min as f64).ln(), (max as f64).ln());
    ((lo + u * (hi - lo)).exp().round() as u64).clamp(min, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_secs(60);

    /// The same seed gives the same objects; another seed other ones.
    #[test]
    fn objects_are_a_function_of_the_seed() {
        let spec = BeamSpec::default();
        let a = spec.objects(WINDOW, 7);
        assert_eq!(a, spec.objects(WINDOW, 7));
        assert_ne!(a, spec.objects(WINDOW, 8));
        let starts: Vec<Duration> = a.iter().map(|o| o.start).collect();
        assert!(starts.is_sorted(), "in order of start");
    }

    /// Sizes stay in their range and spread log-uniformly (about as many below the
    /// geometric middle as above it); starts stay in the window; the count is near its
    /// expectation, over many seeds.
    #[test]
    fn objects_follow_their_distributions() {
        let spec = BeamSpec::default();
        let (min, max) = spec.object_range().unwrap();
        let middle = ((min as f64) * (max as f64)).sqrt();
        let (mut n, mut below, mut seeds) = (0usize, 0usize, 0usize);
        for seed in 0..40 {
            let objects = spec.objects(WINDOW, seed);
            seeds += 1;
            n += objects.len();
            for o in &objects {
                assert!((min..=max).contains(&o.bytes), "{o:?}");
                assert!(o.start < WINDOW, "{o:?}");
                assert!(o.user < spec.users);
                below += usize::from((o.bytes as f64) < middle);
            }
        }
        let mean = n as f64 / seeds as f64;
        let expected = spec.expected_objects(WINDOW);
        assert!(
            (mean - expected).abs() < 0.15 * expected,
            "mean {mean} objects per window, expected {expected}"
        );
        let fraction = below as f64 / n as f64;
        assert!(
            (0.45..0.55).contains(&fraction),
            "{fraction} below the middle"
        );
    }

    /// Bulk flows come first with the bulk transport, end at the window's end, and the
    /// objects take their users' controllers; the flows do not depend on the bulk
    /// controller.
    #[test]
    fn flows_put_the_bulk_first_and_keep_the_objects_of_the_seed() {
        let spec = BeamSpec::default();
        let flows = |bulk_cc: &'static str| {
            spec.flows(
                WINDOW,
                3,
                |_| TransportSpec::with_cc(bulk_cc),
                |k| TransportSpec::with_cc(&spec.short_cc[k]),
            )
        };
        let (a, b) = (flows("satellite"), flows("cubic"));
        assert_eq!(a.len(), b.len());
        for (i, (fa, fb)) in a.iter().zip(&b).enumerate() {
            if i < spec.bulk as usize {
                assert_eq!(fa.transport.cc, "satellite");
                assert_eq!(fb.transport.cc, "cubic");
                assert_eq!(fa.start, spec.bulk_stagger * i as u32);
                assert_eq!(
                    fa.start
                        + match fa.workload {
                            Workload::Timed { duration } => duration,
                            _ => panic!("bulk flows are timed"),
                        },
                    WINDOW
                );
            } else {
                assert_eq!(fa, fb, "object {i} is the same in both variants");
            }
        }
        let objects = spec.objects(WINDOW, 3);
        for (flow, o) in a[spec.bulk as usize..].iter().zip(&objects) {
            assert_eq!(
                flow.transport.cc.as_str(),
                spec.short_cc[o.user as usize % spec.short_cc.len()]
            );
        }
    }

    /// `off = "0s"`: every user stays on, so the count is users x window x rate.
    #[test]
    fn users_without_off_periods_send_at_a_steady_rate() {
        let spec = BeamSpec {
            users: 4,
            bulk: 1,
            min_object: "10kB".into(),
            max_object: "10kB".into(),
            off: Duration::ZERO,
            objects_per_s: 2.0,
            ..BeamSpec::default()
        };
        spec.check(WINDOW).unwrap();
        assert_eq!(spec.expected_objects(WINDOW), 480.0);
        let n: usize = (0..20).map(|seed| spec.objects(WINDOW, seed).len()).sum();
        let mean = n as f64 / 20.0;
        assert!((mean - 480.0).abs() < 0.05 * 480.0, "mean {mean} objects");
        assert!(spec.objects(WINDOW, 1).iter().all(|o| o.bytes == 10_000));
    }

    #[test]
    fn bad_parameters_are_refused_in_one_line_naming_the_key() {
        let cases = [
            (
                BeamSpec {
                    users: 0,
                    ..BeamSpec::default()
                },
                "beam.users",
            ),
            (
                BeamSpec {
                    min_object: "6MB".into(),
                    ..BeamSpec::default()
                },
                "beam.min_object",
            ),
            (
                BeamSpec {
                    on: Duration::ZERO,
                    ..BeamSpec::default()
                },
                "beam.on",
            ),
            (
                BeamSpec {
                    objects_per_s: f64::NAN,
                    ..BeamSpec::default()
                },
                "beam.objects_per_s",
            ),
            (
                BeamSpec {
                    short_cc: vec!["bogus".into()],
                    ..BeamSpec::default()
                },
                "beam.short_cc",
            ),
            (
                BeamSpec {
                    users: 1000,
                    ..BeamSpec::default()
                },
                "beam.users",
            ),
            (
                BeamSpec {
                    bulk_stagger: WINDOW,
                    ..BeamSpec::default()
                },
                "beam.bulk_stagger",
            ),
        ];
        for (spec, key) in cases {
            let e = spec.check(WINDOW).unwrap_err().to_string();
            assert!(e.starts_with(key) && !e.contains('\n'), "{key}: {e}");
        }
        BeamSpec::default().check(WINDOW).unwrap();
    }
}
