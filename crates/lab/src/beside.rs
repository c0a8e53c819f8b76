//! Controllers judged beside other traffic (DESIGN.md, "Judged beside other traffic";
//! issue 38 item 1): [`beam`], the busy beam's scenarios.

pub mod beam;
