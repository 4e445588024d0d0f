//! The crash test's child process: `kiln-crash-worker DIR SEED`. Opens the directory, sets
//! up the accounts if they are missing, prints `ready`, then runs four clients doing bank
//! transfers, half fast and half safe, printing `ack CLIENT SEQ MODE ID` for every
//! acknowledged commit — until it is killed.

use std::io::Write;

use kiln_crashtest::{account_key, int, log_key, seq_key, worker_config, ACCOUNTS, KS, TOTAL};
use kiln_engine::{CommitMode, Engine, Error, TxnOptions};
use rand::{Rng, SeedableRng};

const CLIENTS: u32 = 4;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(seed)) = (args.next(), args.next().and_then(|s| s.parse::<u64>().ok()))
    else {
        eprintln!("usage: kiln-crash-worker DIR SEED");
        std::process::exit(2);
    };
    let engine = Engine::open(&dir, worker_config()).unwrap_or_else(|e| {
        eprintln!("kiln-crash-worker: cannot open {dir}: {e}");
        std::process::exit(1);
    });
    setup(&engine);
    println!("ready");
    let threads: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let engine = engine.clone();
            std::thread::spawn(move || client_loop(&engine, client, seed ^ client as u64))
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
}

fn setup(engine: &Engine) {
    let mut txn = engine.begin(TxnOptions::new()).expect("begin");
    if txn.get(KS, &account_key(0)).expect("get").is_some() {
        return;
    }
    for account in 0..ACCOUNTS {
        txn.put(KS, &account_key(account), &(TOTAL / ACCOUNTS as i64).to_le_bytes()).expect("put");
    }
    txn.commit_safe().expect("set up accounts");
}

fn client_loop(engine: &Engine, client: u32, seed: u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    loop {
        let mode = if rng.gen_bool(0.5) { CommitMode::Safe } else { CommitMode::Fast };
        let (from, to) = (rng.gen_range(0..ACCOUNTS), rng.gen_range(0..ACCOUNTS));
        let amount: i64 = rng.gen_range(1..50);
        match transfer(engine, client, from, to, amount, mode) {
            Ok((seq, id)) => {
                let mode = if mode == CommitMode::Safe { "safe" } else { "fast" };
                let mut out = std::io::stdout().lock();
                writeln!(out, "ack {client} {seq} {mode} {id}").expect("stdout");
                out.flush().expect("stdout");
            }
            Err(e) if e.is_retryable() || matches!(e, Error::Lost { .. }) => {}
            Err(e) => panic!("client {client}: {e}"),
        }
    }
}

fn transfer(
    engine: &Engine,
    client: u32,
    from: u32,
    to: u32,
    amount: i64,
    mode: CommitMode,
) -> kiln_engine::Result<(u64, kiln_engine::TxnId)> {
    let mut txn = engine.begin(TxnOptions::new())?;
    let seq = int(txn.get(KS, &seq_key(client))?) as u64 + 1;
    let from_balance = int(txn.get(KS, &account_key(from))?);
    let to_balance = int(txn.get(KS, &account_key(to))?);
    if from != to {
        txn.put(KS, &account_key(from), &(from_balance - amount).to_le_bytes())?;
        txn.put(KS, &account_key(to), &(to_balance + amount).to_le_bytes())?;
    }
    txn.put(KS, &seq_key(client), &(seq as i64).to_le_bytes())?;
    txn.put(KS, &log_key(client, seq), &amount.to_le_bytes())?;
    Ok((seq, txn.commit_with(mode)?))
}
