//! The two ways workers talk: a shuffle (records go to the worker they name, in rounds) and an
//! all-reduce built on it (every worker's partial goes to every worker, which combine them in worker
//! order, so all hold the same total).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_bytes::ByteBuf;
use timely::communication::Push;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::DistributorPact;
use timely::dataflow::channels::pushers::exchange::Distributor;
use timely::dataflow::channels::Message;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::{Input, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::progress::Stamp;
use timely::worker::Worker;
use timely::ExchangeData;

use revisit_core::reduce::{AllReduce, Combine};

use super::control;

/// What a shuffle carries: records, and each worker's end of a round (so that a round that waits
/// too long can name the workers it waits for).
#[derive(Clone, Debug, Serialize, Deserialize)]
enum Envelope<D> {
    Record(D),
    /// (destination worker, source worker).
    End(u32, u32),
}

/// How long a waiting worker sleeps before it looks at the round's deadline again.
const DEADLINE_POLL: Duration = Duration::from_millis(250);

/// Records sent to the worker each one names, delivered round by round.
pub struct Shuffle<D: ExchangeData + Clone> {
    name: String,
    input: InputHandle<u64, CapacityContainerBuilder<Vec<Envelope<D>>>>,
    probe: ProbeHandle<u64>,
    /// Records received, with the round they were sent in: a fast worker may already send the
    /// next round's records before a slow one has collected this round's.
    received: Rc<RefCell<Vec<(u64, D)>>>,
    /// (round, source worker) of every end of round received.
    ended: Rc<RefCell<Vec<(u64, u32)>>>,
}

impl<D: ExchangeData + Clone> Shuffle<D> {
    /// Builds the dataflow; `dest` names the worker of a record (taken modulo the worker count).
    pub fn new(worker: &mut Worker, name: &str, dest: fn(&D) -> u64) -> Self {
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        let received = Rc::new(RefCell::new(Vec::new()));
        let ended = Rc::new(RefCell::new(Vec::new()));
        let (sink, ends) = (received.clone(), ended.clone());
        let name = name.to_owned();
        let route = move |e: &Envelope<D>| match e {
            Envelope::Record(d) => dest(d),
            Envelope::End(to, _) => *to as u64,
        };
        worker.dataflow::<u64, _, _>(|scope| {
            scope
                .input_from(&mut input)
                .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
                    DistributorPact(Box::new(move |_peers| EachAtOnce(route))),
                    &name,
                    move |_, _| {
                        move |input, _output| {
                            input.for_each(|cap, data: &mut Vec<Envelope<D>>| {
                                let round = cap.least().copied().unwrap_or_default();
                                let mut sink = sink.borrow_mut();
                                for e in data.drain(..) {
                                    match e {
                                        Envelope::Record(d) => sink.push((round, d)),
                                        Envelope::End(_, from) => {
                                            ends.borrow_mut().push((round, from))
                                        }
                                    }
                                }
                            });
                        }
                    },
                )
                .probe_with(&probe);
        });
        Shuffle {
            name,
            input,
            probe,
            received,
            ended,
        }
    }

    /// Sends one record (it travels when the worker steps).
    pub fn send(&mut self, record: D) {
        self.input.send(Envelope::Record(record));
        // out of the input's buffer (and into [`EachAtOnce`]) now, not with 255 more
        self.input.flush();
    }

    /// The records of this round that have arrived so far (the rest come with
    /// [`Shuffle::finish_round`]): a worker that folds them in as they come holds only what is in
    /// flight, not the round's whole table.
    pub fn take_arrived(&mut self) -> Vec<D> {
        self.take_round(*self.input.time())
    }

    /// The records of `round` received so far.
    fn take_round(&mut self, round: u64) -> Vec<D> {
        let mut received = self.received.borrow_mut();
        let (this, later): (Vec<_>, Vec<_>) = received.drain(..).partition(|(r, _)| *r == round);
        *received = later;
        this.into_iter().map(|(_, d)| d).collect()
    }

    /// Ends this round: waits until every worker's records of the round have arrived, and returns
    /// them (in arrival order, which varies from run to run). A round that outlasts the round
    /// deadline ends the process, naming the workers (and processes) it still waits for.
    pub fn finish_round(&mut self, worker: &mut Worker) -> Vec<D> {
        let round = *self.input.time();
        let (me, peers) = (worker.index() as u32, worker.peers() as u32);
        for w in 0..peers {
            self.input.send(Envelope::End(w, me));
        }
        self.input.advance_to(round + 1);
        let limit = control::round_timeout();
        let deadline = Instant::now() + limit;
        while self.probe.less_than(&(round + 1)) {
            worker.step_or_park(Some(DEADLINE_POLL));
            if Instant::now() > deadline {
                let ended = self.ended.borrow();
                let waiting: Vec<usize> = (0..peers as usize)
                    .filter(|&w| !ended.iter().any(|&(r, s)| r == round && s as usize == w))
                    .collect();
                control::give_up(format!(
                    "round {round} of the exchange {} waited {:.0} s (--round-timeout-s) for {}",
                    self.name,
                    limit.as_secs_f64(),
                    control::describe_workers(&waiting)
                ));
            }
        }
        self.ended.borrow_mut().retain(|&(r, _)| r > round);
        self.take_round(round)
    }
}

/// Routes every record to its worker on its own, as it comes. Every record of a shuffle is a
/// batch (of rows, of pairs, a partial), so it is worth a message: timely's own exchange gathered
/// 256 records to a worker before it sent them, and with the state's batches of 65,536 rows that
/// was the whole table, held by its senders until the round's end, and not folded in as it
/// arrived.
struct EachAtOnce<F>(F);

impl<R, F: Fn(&R) -> u64> Distributor<Vec<R>> for EachAtOnce<F> {
    fn partition<T: Clone, P: Push<Message<T, Vec<R>>>>(
        &mut self,
        container: &mut Vec<R>,
        stamp: &Stamp<T>,
        pushers: &mut [P],
    ) {
        let workers = pushers.len() as u64;
        for record in container.drain(..) {
            let to = (self.0(&record) % workers) as usize;
            Message::push_at(&mut vec![record], stamp.clone(), &mut pushers[to]);
        }
    }

    fn flush<T: Clone, P: Push<Message<T, Vec<R>>>>(&mut self, _: &Stamp<T>, _: &mut [P]) {}
}

/// A message of the all-reduce: (destination worker, source worker, serialised partial). The
/// partial travels as one byte string: as a plain `Vec<u8>` bincode would encode it byte by byte.
pub type ReduceMessage = (u32, u32, ByteBuf);

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
        let mut bytes = bincode::serialize(&partial).expect("serialising a partial result");
        // Only the other workers get the bytes, the last of them without a copy: a partial can
        // be large (the assignment's, 20 bytes of each of a worker's hosts: 31 MB on 2 workers
        // at 3.1M hosts), and each copy and each decoding is memory touched for the first time.
        let others: Vec<u32> = (0..peers as u32).filter(|&w| w != me).collect();
        for (k, &dest) in others.iter().enumerate() {
            let sent = if k + 1 == others.len() {
                std::mem::take(&mut bytes)
            } else {
                bytes.clone()
            };
            self.channel.send((dest, me, ByteBuf::from(sent)));
        }
        let mut got = self.channel.finish_round(self.worker);
        got.sort_by_key(|m| m.1);
        let mut decoded = got
            .into_iter()
            .map(|(_, _, b)| bincode::deserialize::<M>(&b).expect("decoding a partial result"));
        // every worker combines the partials in worker order, its own as it is (a partial is its
        // decoded bytes, bit for bit), the others' decoded
        let mut own = Some(partial);
        let mut parts = (0..peers as u32).map(|w| {
            if w == me {
                own.take().expect("one partial of this worker's own")
            } else {
                decoded.next().expect("every other worker sends a partial")
            }
        });
        let mut total = parts.next().expect("at least one worker");
        for p in parts {
            total.combine(p);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_arrives_while_its_round_is_still_open() {
        let guards = timely::execute(timely::Config::process(2), |worker| {
            let me = worker.index() as u32;
            let mut shuffle = Shuffle::new(worker, "Test", |r: &(u32, u32)| r.0 as u64);
            // one record to the other worker, one to itself
            shuffle.send((1 - me, me));
            shuffle.send((me, me));
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut arrived = Vec::new();
            while arrived.len() < 2 && Instant::now() < deadline {
                worker.step_or_park(Some(Duration::from_millis(1)));
                arrived.extend(shuffle.take_arrived());
            }
            arrived.sort_unstable();
            let rest = shuffle.finish_round(worker);
            (arrived, rest)
        })
        .expect("two workers");
        for (w, result) in guards.join().into_iter().enumerate() {
            let (arrived, rest) = result.expect("a worker's result");
            let w = w as u32;
            assert_eq!(arrived, [(w, 0), (w, 1)], "worker {w}");
            assert!(rest.is_empty(), "worker {w}: {rest:?}");
        }
    }
}
