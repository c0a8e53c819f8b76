//! Controllers judged beside other traffic (DESIGN.md, "Judged beside other traffic";
//! issue 38 item 1): [`pairs`] (the runs of two flows, from the record's shared period),
//! [`harm`] (Ware et al.'s harm against the incumbent's own kind), [`checks`] (issue 38's
//! verdicts on the profile), [`objects`] (a beam's objects and bulk flows), [`beam`] (the
//! busy beam's scenarios).

pub mod beam;
pub mod checks;
pub mod harm;
pub mod objects;
pub mod pairs;
