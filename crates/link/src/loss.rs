//! Random loss processes, applied at the link input: a lost packet never enters the queue,
//! so it takes no queue space and no transmission time. (A wireless loss on the real link
//! happens after the bottleneck; modelling it at the input only changes whether the lost
//! packet occupied the queue, which matters little at the loss rates of the seeds and keeps
//! drops and their reasons in one place.)

use crate::random::{STREAM_LOSS, stream_rng};
use crate::spec::LossSpec;
use crate::truth::DropReason;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

#[derive(Debug, Clone)]
pub(crate) struct LossProcess {
    spec: LossSpec,
    /// Gilbert-Elliott: currently in the bad state.
    bad: bool,
    /// Periodic: packets offered so far.
    offered: u64,
    rng: ChaCha8Rng,
}

impl LossProcess {
    pub(crate) fn new(spec: &LossSpec, seed: u64) -> Self {
        LossProcess {
            spec: *spec,
            bad: false,
            offered: 0,
            rng: stream_rng(seed, STREAM_LOSS),
        }
    }

    /// Steps the process for one offered packet; `Some` if it is lost.
    pub(crate) fn draw(&mut self) -> Option<DropReason> {
        match self.spec {
            LossSpec::None => None,
            LossSpec::Bernoulli { plr } => {
                (plr > 0.0 && self.rng.random_bool(plr)).then_some(DropReason::RandomLoss)
            }
            LossSpec::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_in_good,
                loss_in_bad,
            } => {
                let flip = if self.bad {
                    p_bad_to_good
                } else {
                    p_good_to_bad
                };
                if self.rng.random_bool(flip) {
                    self.bad = !self.bad;
                }
                let p = if self.bad { loss_in_bad } else { loss_in_good };
                self.rng.random_bool(p).then_some(DropReason::BurstLoss)
            }
            LossSpec::Periodic { every, offset } => {
                let position = self.offered % u64::from(every);
                self.offered += 1;
                (position == u64::from(offset)).then_some(DropReason::RandomLoss)
            }
        }
    }
}
