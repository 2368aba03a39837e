//! The two ways workers talk: a shuffle (records go to the worker they name, in rounds) and an
//! all-reduce built on it (every worker's partial goes to every worker, which combine them in worker
//! order, so all hold the same total).

use std::cell::RefCell;
use std::rc::Rc;

use serde::{de::DeserializeOwned, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::{Input, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;
use timely::ExchangeData;

use revisit_core::reduce::{AllReduce, Combine};

/// Records sent to the worker each one names, delivered round by round.
pub struct Shuffle<D: ExchangeData + Clone> {
    input: InputHandle<u64, CapacityContainerBuilder<Vec<D>>>,
    probe: ProbeHandle<u64>,
    /// Records received, with the round they were sent in: a fast worker may already send the
    /// next round's records before a slow one has collected this round's.
    received: Rc<RefCell<Vec<(u64, D)>>>,
}

impl<D: ExchangeData + Clone> Shuffle<D> {
    /// Builds the dataflow; `dest` names the worker of a record (taken modulo the worker count).
    pub fn new(worker: &mut Worker, name: &str, dest: fn(&D) -> u64) -> Self {
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        let received = Rc::new(RefCell::new(Vec::new()));
        let sink = received.clone();
        let name = name.to_owned();
        worker.dataflow::<u64, _, _>(|scope| {
            scope
                .input_from(&mut input)
                .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
                    Exchange::new(dest),
                    &name,
                    move |_, _| {
                        move |input, _output| {
                            input.for_each(|cap, data: &mut Vec<D>| {
                                let round = cap.least().copied().unwrap_or_default();
                                sink.borrow_mut().extend(data.drain(..).map(|d| (round, d)));
                            });
                        }
                    },
                )
                .probe_with(&probe);
        });
        Shuffle {
            input,
            probe,
            received,
        }
    }

    /// Sends one record (it travels when the worker steps).
    pub fn send(&mut self, record: D) {
        self.input.send(record);
    }

    /// Ends this round: waits until every worker's records of the round have arrived, and returns
    /// them (in arrival order, which varies from run to run).
    pub fn finish_round(&mut self, worker: &mut Worker) -> Vec<D> {
        let round = *self.input.time();
        self.input.advance_to(round + 1);
        let probe = &self.probe;
        worker.step_or_park_while(None, || probe.less_than(&(round + 1)));
        let mut received = self.received.borrow_mut();
        let (this, later): (Vec<_>, Vec<_>) = received.drain(..).partition(|(r, _)| *r == round);
        *received = later;
        this.into_iter().map(|(_, d)| d).collect()
    }
}

/// A message of the all-reduce: (destination worker, source worker, serialised partial).
pub type ReduceMessage = (u32, u32, Vec<u8>);

/// The all-reduce of a timely worker.
pub struct Reducer<'w> {
    pub worker: &'w mut Worker,
    pub channel: Shuffle<ReduceMessage>,
    /// Rounds done (one per all-reduce).
    pub rounds: u64,
}

impl<'w> Reducer<'w> {
    /// Builds the all-reduce dataflow on `worker`.
    pub fn new(worker: &'w mut Worker) -> Self {
        let channel = Shuffle::new(worker, "AllReduce", |m: &ReduceMessage| m.0 as u64);
        Reducer {
            worker,
            channel,
            rounds: 0,
        }
    }
}

impl AllReduce for Reducer<'_> {
    fn all_reduce<M: Combine + Serialize + DeserializeOwned + Clone + 'static>(
        &mut self,
        partial: M,
    ) -> M {
        self.rounds += 1;
        let peers = self.worker.peers();
        if peers == 1 {
            return partial;
        }
        let me = self.worker.index() as u32;
        // Serialising our own types cannot fail; a failure here is a bug, and aborts the job.
        let bytes = bincode::serialize(&partial).expect("serialising a partial result");
        for dest in 0..peers as u32 {
            self.channel.send((dest, me, bytes.clone()));
        }
        let mut got = self.channel.finish_round(self.worker);
        got.sort_by_key(|m| m.1);
        let mut parts = got
            .into_iter()
            .map(|(_, _, b)| bincode::deserialize::<M>(&b).expect("decoding a partial result"));
        let mut total = parts.next().expect("every worker sends a partial");
        for p in parts {
            total.combine(p);
        }
        total
    }
}
