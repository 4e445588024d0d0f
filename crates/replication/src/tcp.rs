//! The network between the nodes of a cluster: Raft's messages over TCP, each connection
//! authenticated with the cluster's shared secret.
//!
//! ```text
//!  client (the sender)                          server (the receiver)
//!  Hello{protocol, cluster, from, to, nonce_c} ─▶
//!                                            ◀─ Challenge{nonce_s, proof_s}   (or Refused)
//!  checks proof_s; Proof{proof_c}            ─▶
//!                                            ◀─ Welcome                       (or Refused)
//!  Request ─▶ ◀─ Reply, one at a time, for as long as the connection lasts
//! ```
//!
//! A proof is HMAC-SHA256 under the secret of the role, the cluster's name, both node ids
//! and both nonces, so each side proves it knows the secret without sending it, a proof is
//! good for one connection only, and neither side can replay the other's. Until the
//! handshake ends a peer may send at most [`HANDSHAKE_BYTES_MAX`] bytes, within
//! [`HANDSHAKE_TIMEOUT`]. Messages are length-prefixed (`u32`, little-endian) postcard.
//! The traffic is authenticated, not encrypted: a cluster's links belong on a private
//! network (docs/replication.md).

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::Stream;

use kiln_engine::Engine;
use openraft::alias::{SnapshotMetaOf, SnapshotOf, VoteOf};
use openraft::error::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{RPCOption, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, StreamAppendResult,
    TransferLeaderRequest, TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::{OptionalSend, RaftNetworkV2};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::state_machine::SnapshotData;
use crate::types::{KilnRaft, Member};
use crate::Raft;

/// The version of this protocol; a peer speaking another is refused.
const PROTOCOL: u32 = 1;
/// The most a peer may send before it has proven it knows the secret.
pub const HANDSHAKE_BYTES_MAX: u32 = 4096;
/// How long a peer has to complete the handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest message between authenticated nodes (a batch of entries). The engine's
/// entries are at most 256 MiB; the library sends at most a few hundred per message.
pub const MESSAGE_BYTES_MAX: u32 = 1 << 30;
/// The shortest secret accepted.
pub const SECRET_BYTES_MIN: usize = 16;
/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// What both ends of every link share: the cluster's name and secret.
#[derive(Clone)]
pub struct ClusterAuth {
    cluster: String,
    key: hmac::Key,
    rng: SystemRandom,
}

impl std::fmt::Debug for ClusterAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterAuth").field("cluster", &self.cluster).finish_non_exhaustive()
    }
}

impl ClusterAuth {
    /// The authentication of cluster `cluster` with `secret` (at least [`SECRET_BYTES_MIN`]
    /// bytes).
    pub fn new(cluster: &str, secret: &[u8]) -> Result<ClusterAuth, String> {
        if secret.len() < SECRET_BYTES_MIN {
            return Err(format!(
                "the cluster secret must be at least {SECRET_BYTES_MIN} bytes, not {}",
                secret.len()
            ));
        }
        Ok(ClusterAuth {
            cluster: cluster.to_string(),
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            rng: SystemRandom::new(),
        })
    }

    fn nonce(&self) -> io::Result<[u8; 32]> {
        let mut nonce = [0u8; 32];
        self.rng.fill(&mut nonce).map_err(|_| io::Error::other("no random numbers"))?;
        Ok(nonce)
    }

    fn transcript(&self, role: &[u8], hello: &Hello, nonce_s: &[u8; 32]) -> Vec<u8> {
        let mut t = Vec::with_capacity(128 + self.cluster.len());
        t.extend_from_slice(b"kiln-raft\0");
        t.extend_from_slice(role);
        t.push(0);
        t.extend_from_slice(&(self.cluster.len() as u64).to_le_bytes());
        t.extend_from_slice(self.cluster.as_bytes());
        t.extend_from_slice(&hello.from.to_le_bytes());
        t.extend_from_slice(&hello.to.to_le_bytes());
        t.extend_from_slice(&hello.nonce);
        t.extend_from_slice(nonce_s);
        t
    }

    fn prove(&self, role: &[u8], hello: &Hello, nonce_s: &[u8; 32]) -> Vec<u8> {
        hmac::sign(&self.key, &self.transcript(role, hello, nonce_s)).as_ref().to_vec()
    }

    fn check(&self, role: &[u8], hello: &Hello, nonce_s: &[u8; 32], proof: &[u8]) -> bool {
        hmac::verify(&self.key, &self.transcript(role, hello, nonce_s), proof).is_ok()
    }
}

#[derive(Serialize, Deserialize)]
struct Hello {
    protocol: u32,
    cluster: String,
    from: u64,
    to: u64,
    nonce: [u8; 32],
}

#[derive(Serialize, Deserialize)]
enum Answer {
    Challenge { nonce: [u8; 32], proof: Vec<u8> },
    Welcome,
    Refused(String),
}

#[derive(Serialize, Deserialize)]
struct Proof {
    proof: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
enum Request {
    /// Turns the connection into a stream of appends: from now on the client sends
    /// `AppendEntriesRequest`s and the server answers each with a [`StreamReply`], in order,
    /// without waiting for one answer before the next request (Raft's pipelined replication).
    Stream,
    Append(AppendEntriesRequest<KilnRaft>),
    Vote(VoteRequest<KilnRaft>),
    PreVote(VoteRequest<KilnRaft>),
    TransferLeader(TransferLeaderRequest<KilnRaft>),
    /// A snapshot (the sender's checkpoint file) follows, in [`Request::SnapshotChunk`]s of
    /// `len` bytes in all; the server answers once it is installed.
    Snapshot {
        vote: VoteOf<KilnRaft>,
        meta: SnapshotMetaOf<KilnRaft>,
        len: u64,
    },
    SnapshotChunk(Vec<u8>),
}

#[derive(Serialize, Deserialize)]
enum StreamReply {
    Result(StreamAppendResult<KilnRaft>),
    Failed(String),
}

#[derive(Serialize, Deserialize)]
enum Reply {
    Append(AppendEntriesResponse<KilnRaft>),
    Vote(VoteResponse<KilnRaft>),
    TransferLeader(TransferLeaderResponse<KilnRaft>),
    Snapshot(SnapshotResponse<KilnRaft>),
    /// The receiver could not handle the request (it is stopping, or a snapshot it was sent
    /// could not be installed).
    Failed(String),
}

/// The bytes of a snapshot sent per message.
const SNAPSHOT_CHUNK_BYTES: usize = 1 << 20;
/// How long sending one chunk may take.
const SNAPSHOT_CHUNK_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a node may take to install a snapshot it received whole.
const SNAPSHOT_INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

async fn send<T: Serialize>(
    stream: &mut (impl AsyncWriteExt + Unpin),
    message: &T,
) -> io::Result<()> {
    let body = postcard::to_stdvec(message).map_err(io::Error::other)?;
    let len =
        u32::try_from(body.len()).ok().filter(|&n| n <= MESSAGE_BYTES_MAX).ok_or_else(|| {
            io::Error::other(format!("a message of {} bytes is too large", body.len()))
        })?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(&body);
    stream.write_all(&frame).await?;
    stream.flush().await
}

async fn receive<T: DeserializeOwned>(
    stream: &mut (impl AsyncReadExt + Unpin),
    max: u32,
) -> io::Result<T> {
    let len = stream.read_u32_le().await?;
    if len > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a message of {len} bytes is beyond the limit of {max}"),
        ));
    }
    let mut body = vec![0u8; len as usize];
    stream.read_exact(&mut body).await?;
    postcard::from_bytes(&body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Serves the Raft messages other nodes send to node `id` on `listener`, until the returned
/// task is aborted. Snapshots sent to it are received into `engine`'s directory.
pub fn serve(
    listener: TcpListener,
    raft: Raft,
    engine: Engine,
    auth: ClusterAuth,
    id: u64,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a replication connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (raft, engine, auth) = (raft.clone(), engine.clone(), auth.clone());
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                if let Err(e) = serve_connection(stream, raft, engine, auth, id).await {
                    tracing::debug!(%peer, error = %e, "replication connection closed");
                }
            });
        }
    })
}

async fn accept_peer(stream: &mut TcpStream, auth: &ClusterAuth, id: u64) -> io::Result<u64> {
    let hello: Hello = receive(stream, HANDSHAKE_BYTES_MAX).await?;
    let refuse = |why: String| async move { Err::<u64, _>(io::Error::other(why)) };
    let refusal = if hello.protocol != PROTOCOL {
        Some(format!("protocol {} is not spoken here ({PROTOCOL} is)", hello.protocol))
    } else if hello.cluster != auth.cluster {
        Some(format!("this node belongs to cluster {:?}, not {:?}", auth.cluster, hello.cluster))
    } else if hello.to != id {
        Some(format!("this is node {id}, not node {}", hello.to))
    } else {
        None
    };
    if let Some(why) = refusal {
        send(stream, &Answer::Refused(why.clone())).await?;
        return refuse(why).await;
    }
    let nonce = auth.nonce()?;
    let proof = auth.prove(b"server", &hello, &nonce);
    send(stream, &Answer::Challenge { nonce, proof }).await?;
    let Proof { proof } = receive(stream, HANDSHAKE_BYTES_MAX).await?;
    if !auth.check(b"client", &hello, &nonce, &proof) {
        let why = format!("node {} did not prove it knows the cluster secret", hello.from);
        tracing::warn!(from = hello.from, "refused a replication connection: wrong secret");
        send(stream, &Answer::Refused("authentication failed".into())).await?;
        return refuse(why).await;
    }
    send(stream, &Answer::Welcome).await?;
    Ok(hello.from)
}

async fn serve_connection(
    mut stream: TcpStream,
    raft: Raft,
    engine: Engine,
    auth: ClusterAuth,
    id: u64,
) -> io::Result<()> {
    let from = tokio::time::timeout(HANDSHAKE_TIMEOUT, accept_peer(&mut stream, &auth, id))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "handshake timed out"))??;
    tracing::debug!(from, "replication connection authenticated");
    loop {
        let request: Request = match receive(&mut stream, MESSAGE_BYTES_MAX).await {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                tracing::debug!(from, "replication connection: the peer closed it");
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let failed = |e: &dyn std::fmt::Display| Reply::Failed(e.to_string());
        let reply = match request {
            Request::Stream => return serve_stream(stream, raft).await,
            Request::Append(rpc) => {
                raft.append_entries(rpc).await.map_or_else(|e| failed(&e), Reply::Append)
            }
            Request::Vote(rpc) => raft.vote(rpc).await.map_or_else(|e| failed(&e), Reply::Vote),
            Request::PreVote(rpc) => {
                raft.pre_vote(rpc).await.map_or_else(|e| failed(&e), Reply::Vote)
            }
            Request::TransferLeader(rpc) => raft
                .handle_transfer_leader(rpc)
                .await
                .map_or_else(|e| failed(&e), Reply::TransferLeader),
            Request::Snapshot { vote, meta, len } => {
                let file = match receive_snapshot(&mut stream, &engine, from, len).await? {
                    Ok(file) => file,
                    Err(e) => {
                        // The rest of the transfer cannot be told from requests: end here.
                        send(&mut stream, &failed(&e)).await?;
                        return Ok(());
                    }
                };
                let snapshot = SnapshotOf::<KilnRaft, SnapshotData> { meta, snapshot: file };
                raft.install_full_snapshot(vote, snapshot)
                    .await
                    .map_or_else(|e| failed(&e), Reply::Snapshot)
            }
            Request::SnapshotChunk(_) => {
                return Err(io::Error::other("a snapshot chunk outside a snapshot"))
            }
        };
        send(&mut stream, &reply).await?;
    }
}

/// Receives the `len` bytes of a snapshot into a file of `engine`'s directory and checks it.
/// The outer error is the connection's; the inner one, the snapshot's (told to the sender).
async fn receive_snapshot(
    stream: &mut TcpStream,
    engine: &Engine,
    from: u64,
    len: u64,
) -> io::Result<Result<SnapshotData, kiln_engine::Error>> {
    let engine = engine.clone();
    let sink = tokio::task::spawn_blocking(move || engine.checkpoint_sink())
        .await
        .map_err(io::Error::other)?;
    let mut sink = match sink {
        Ok(sink) => Some(sink),
        Err(e) => return Ok(Err(e)),
    };
    tracing::info!(from, len, "receiving a snapshot");
    let mut received = 0u64;
    while received < len {
        let chunk = match receive(stream, MESSAGE_BYTES_MAX).await? {
            Request::SnapshotChunk(chunk) => chunk,
            _ => return Err(io::Error::other("a snapshot ended before its last chunk")),
        };
        received += chunk.len() as u64;
        if received > len {
            return Err(io::Error::other("a snapshot longer than it said"));
        }
        let mut writing = sink.take().expect("the sink is back after each write");
        let (writing, written) = tokio::task::spawn_blocking(move || {
            let written = writing.write(&chunk);
            (writing, written)
        })
        .await
        .map_err(io::Error::other)?;
        if let Err(e) = written {
            return Ok(Err(e));
        }
        sink = Some(writing);
    }
    let sink = sink.expect("the sink is back after each write");
    tokio::task::spawn_blocking(move || sink.finish()).await.map_err(io::Error::other)
}

/// Serves a stream of appends on `stream` until the client ends it.
async fn serve_stream(stream: TcpStream, raft: Raft) -> io::Result<()> {
    use futures::StreamExt;
    let (read, mut write) = stream.into_split();
    let requests = futures::stream::unfold(read, |mut read| async move {
        match receive::<AppendEntriesRequest<KilnRaft>>(&mut read, MESSAGE_BYTES_MAX).await {
            Ok(request) => {
                tracing::trace!(target: "kiln_latency", n = request.entries.len(), "stream receive");
                Some((request, read))
            }
            Err(e) => {
                if e.kind() != io::ErrorKind::UnexpectedEof {
                    tracing::debug!(error = %e, "append stream: reading a request failed");
                }
                None
            }
        }
    });
    let results = raft.stream_append(requests);
    futures::pin_mut!(results);
    while let Some(result) = results.next().await {
        tracing::trace!(target: "kiln_latency", "stream answer");
        let reply = match result {
            Ok(r) => StreamReply::Result(r),
            Err(fatal) => StreamReply::Failed(fatal.to_string()),
        };
        send(&mut write, &reply).await?;
    }
    tracing::debug!("append stream: ended");
    Ok(())
}

/// The network of one node: connections to the others at the addresses the cluster's
/// membership gives them.
#[derive(Clone)]
pub struct TcpNetwork {
    from: u64,
    auth: ClusterAuth,
}

impl TcpNetwork {
    /// The network of node `from`.
    pub fn new(from: u64, auth: ClusterAuth) -> TcpNetwork {
        TcpNetwork { from, auth }
    }
}

/// A connection to one node, opened (and authenticated) on first use and again after any
/// failure.
pub struct TcpConnection {
    from: u64,
    to: u64,
    addr: String,
    auth: ClusterAuth,
    stream: Option<TcpStream>,
}

impl RaftNetworkFactory<KilnRaft> for TcpNetwork {
    type Network = TcpConnection;

    async fn new_client(&mut self, target: u64, node: &Member) -> TcpConnection {
        TcpConnection {
            from: self.from,
            to: target,
            addr: node.raft_addr.clone(),
            auth: self.auth.clone(),
            stream: None,
        }
    }
}

impl TcpConnection {
    async fn connect(&self) -> io::Result<TcpStream> {
        let mut stream =
            tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(self.addr.as_str()))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
        stream.set_nodelay(true)?;
        let hello = Hello {
            protocol: PROTOCOL,
            cluster: self.auth.cluster.clone(),
            from: self.from,
            to: self.to,
            nonce: self.auth.nonce()?,
        };
        let handshake = async {
            send(&mut stream, &hello).await?;
            let nonce = match receive(&mut stream, HANDSHAKE_BYTES_MAX).await? {
                Answer::Challenge { nonce, proof }
                    if self.auth.check(b"server", &hello, &nonce, &proof) =>
                {
                    nonce
                }
                Answer::Challenge { .. } => {
                    return Err(io::Error::other(format!(
                        "{} did not prove it knows the cluster secret",
                        self.addr
                    )))
                }
                Answer::Refused(why) => return Err(io::Error::other(why)),
                Answer::Welcome => return Err(io::Error::other("unexpected welcome")),
            };
            send(&mut stream, &Proof { proof: self.auth.prove(b"client", &hello, &nonce) }).await?;
            match receive(&mut stream, HANDSHAKE_BYTES_MAX).await? {
                Answer::Welcome => Ok(()),
                Answer::Refused(why) => Err(io::Error::other(why)),
                Answer::Challenge { .. } => Err(io::Error::other("unexpected challenge")),
            }
        };
        tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "handshake timed out"))??;
        Ok(stream)
    }

    /// Sends `request` and waits for the reply, within `option`'s deadline.
    async fn call(
        &mut self,
        request: Request,
        option: &RPCOption,
    ) -> Result<Reply, RPCError<KilnRaft>> {
        if self.stream.is_none() {
            let stream = self.connect().await.map_err(|e| {
                RPCError::Unreachable(Unreachable::from_string(format!(
                    "node {} at {}: {e}",
                    self.to, self.addr
                )))
            })?;
            self.stream = Some(stream);
        }
        let stream = self.stream.as_mut().expect("connected above");
        let exchange = async {
            send(stream, &request).await?;
            receive::<Reply>(stream, MESSAGE_BYTES_MAX).await
        };
        let result = match tokio::time::timeout(option.hard_ttl(), exchange).await {
            Ok(result) => result,
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "no reply in time")),
        };
        match result {
            Ok(Reply::Failed(why)) => Err(RPCError::Unreachable(Unreachable::from_string(
                format!("node {}: {why}", self.to),
            ))),
            Ok(reply) => Ok(reply),
            Err(e) => {
                // The connection's state is unknown: start over next time.
                self.stream = None;
                Err(RPCError::Network(NetworkError::from_string(format!(
                    "node {} at {}: {e}",
                    self.to, self.addr
                ))))
            }
        }
    }
}

impl TcpConnection {
    /// Pipelined replication on a connection of its own: requests are written as the
    /// library produces them, and answers read back in order. A reply that has not come
    /// within `option`'s deadline while requests wait for one ends the stream with an error.
    async fn open_stream<'s, S>(
        &'s mut self,
        mut input: S,
        option: RPCOption,
    ) -> Result<
        BoxStream<'s, Result<StreamAppendResult<KilnRaft>, RPCError<KilnRaft>>>,
        RPCError<KilnRaft>,
    >
    where
        S: Stream<Item = AppendEntriesRequest<KilnRaft>> + OptionalSend + Unpin + 'static,
    {
        use futures::StreamExt;
        let (to, addr) = (self.to, self.addr.clone());
        // Connect only once there is something to send. The library paces its requests after
        // failures (a backoff inside the request stream), so taking the first request before
        // connecting also paces the attempts to reach a node that is down or cut off, instead
        // of retrying the connection in a tight loop.
        let Some(first) = input.next().await else {
            return Ok(Box::pin(futures::stream::empty()));
        };
        let mut stream = self.connect().await.map_err(|e| {
            RPCError::Unreachable(Unreachable::from_string(format!("node {to} at {addr}: {e}")))
        })?;
        send(&mut stream, &Request::Stream).await.map_err(|e| network_error(to, &addr, e))?;
        let (read, mut write) = stream.into_split();
        let outstanding = Arc::new(AtomicUsize::new(1));
        let sent = outstanding.clone();
        let writer = tokio::spawn(async move {
            if let Err(e) = send(&mut write, &first).await {
                tracing::debug!(to, error = %e, "append stream: sending a request failed");
                return;
            }
            while let Some(request) = input.next().await {
                tracing::trace!(target: "kiln_latency", to, n = request.entries.len(), "stream send");
                sent.fetch_add(1, Ordering::SeqCst);
                if let Err(e) = send(&mut write, &request).await {
                    tracing::debug!(to, error = %e, "append stream: sending a request failed");
                    return;
                }
            }
            let _ = write.shutdown().await;
        });
        let ttl = option.hard_ttl();
        let state = Some((ReplyReader { read, writer }, outstanding));
        let replies = futures::stream::unfold((state, addr), move |(state, addr)| async move {
            let (mut read, outstanding) = state?;
            let reply = loop {
                match tokio::time::timeout(
                    ttl,
                    receive::<StreamReply>(&mut read.read, MESSAGE_BYTES_MAX),
                )
                .await
                {
                    Ok(reply) => break reply,
                    // Nothing asked: an idle stream is not a dead one.
                    Err(_) if outstanding.load(Ordering::SeqCst) == 0 => continue,
                    Err(_) => {
                        break Err(io::Error::new(io::ErrorKind::TimedOut, "no reply in time"))
                    }
                }
            };
            tracing::trace!(target: "kiln_latency", to, "stream reply");
            match reply {
                Ok(StreamReply::Result(result)) => {
                    outstanding.fetch_sub(1, Ordering::SeqCst);
                    let ends = result.is_err();
                    let next = if ends { None } else { Some((read, outstanding)) };
                    Some((Ok(result), (next, addr)))
                }
                Ok(StreamReply::Failed(why)) => Some((
                    Err(RPCError::Unreachable(Unreachable::from_string(format!(
                        "node {to}: {why}"
                    )))),
                    (None, addr),
                )),
                Err(e)
                    if e.kind() == io::ErrorKind::UnexpectedEof
                        && outstanding.load(Ordering::SeqCst) == 0 =>
                {
                    None
                }
                Err(e) => Some((Err(network_error(to, &addr, e)), (None, addr))),
            }
        });
        Ok(Box::pin(replies))
    }
}

impl TcpConnection {
    /// Sends a snapshot on a connection of its own (its chunks must not come between other
    /// requests and their replies) and waits for the receiver to install it.
    async fn send_snapshot(
        &mut self,
        vote: VoteOf<KilnRaft>,
        snapshot: SnapshotOf<KilnRaft, SnapshotData>,
    ) -> Result<SnapshotResponse<KilnRaft>, StreamingError<KilnRaft>> {
        let (to, addr) = (self.to, self.addr.clone());
        let unreachable = |e: &dyn std::fmt::Display| {
            StreamingError::Unreachable(Unreachable::from_string(format!(
                "node {to} at {addr}: {e}"
            )))
        };
        let mut stream = self.connect().await.map_err(|e| unreachable(&e))?;
        let mut file = snapshot.snapshot;
        let len = file.len();
        tracing::info!(to, len, last = ?snapshot.meta.last_log_id, "sending a snapshot");
        let header = Request::Snapshot { vote, meta: snapshot.meta, len };
        send(&mut stream, &header).await.map_err(|e| unreachable(&e))?;
        let mut at = 0u64;
        while at < len {
            let n = (len - at).min(SNAPSHOT_CHUNK_BYTES as u64) as usize;
            let (back, chunk) = tokio::task::spawn_blocking(move || {
                let mut chunk = vec![0u8; n];
                let read = file.read_exact_at(&mut chunk, at);
                (file, read.map(|()| chunk))
            })
            .await
            .map_err(|e| unreachable(&e))?;
            file = back;
            let chunk = chunk.map_err(|e| unreachable(&format!("reading the snapshot: {e}")))?;
            let sent = tokio::time::timeout(
                SNAPSHOT_CHUNK_TIMEOUT,
                send(&mut stream, &Request::SnapshotChunk(chunk)),
            )
            .await
            .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "sending timed out")));
            sent.map_err(|e| unreachable(&e))?;
            at += n as u64;
        }
        let reply = tokio::time::timeout(
            SNAPSHOT_INSTALL_TIMEOUT,
            receive::<Reply>(&mut stream, MESSAGE_BYTES_MAX),
        )
        .await
        .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "no answer in time")));
        match reply.map_err(|e| unreachable(&e))? {
            Reply::Snapshot(response) => {
                tracing::info!(to, len, "snapshot installed");
                Ok(response)
            }
            Reply::Failed(why) => Err(unreachable(&format!("installing the snapshot: {why}"))),
            _ => Err(unreachable(&"answered a snapshot out of turn")),
        }
    }
}

/// The reading end of a stream of appends; the task writing its requests stops with it.
struct ReplyReader {
    read: tokio::net::tcp::OwnedReadHalf,
    writer: tokio::task::JoinHandle<()>,
}

impl Drop for ReplyReader {
    fn drop(&mut self) {
        self.writer.abort();
    }
}

fn network_error(to: u64, addr: &str, e: io::Error) -> RPCError<KilnRaft> {
    RPCError::Network(NetworkError::from_string(format!("node {to} at {addr}: {e}")))
}

fn unexpected(to: u64) -> RPCError<KilnRaft> {
    RPCError::Network(NetworkError::from_string(format!("node {to} answered out of turn")))
}

impl RaftNetworkV2<KilnRaft> for TcpConnection {
    type SnapshotData = SnapshotData;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<KilnRaft>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<KilnRaft>, RPCError<KilnRaft>> {
        match self.call(Request::Append(rpc), &option).await? {
            Reply::Append(r) => Ok(r),
            _ => Err(unexpected(self.to)),
        }
    }

    fn stream_append<'s, S>(
        &'s mut self,
        input: S,
        option: RPCOption,
    ) -> BoxFuture<
        's,
        Result<
            BoxStream<'s, Result<StreamAppendResult<KilnRaft>, RPCError<KilnRaft>>>,
            RPCError<KilnRaft>,
        >,
    >
    where
        S: Stream<Item = AppendEntriesRequest<KilnRaft>> + OptionalSend + Unpin + 'static,
    {
        Box::pin(self.open_stream(input, option))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<KilnRaft>,
        option: RPCOption,
    ) -> Result<VoteResponse<KilnRaft>, RPCError<KilnRaft>> {
        match self.call(Request::Vote(rpc), &option).await? {
            Reply::Vote(r) => Ok(r),
            _ => Err(unexpected(self.to)),
        }
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<KilnRaft>,
        option: RPCOption,
    ) -> Result<VoteResponse<KilnRaft>, RPCError<KilnRaft>> {
        match self.call(Request::PreVote(rpc), &option).await? {
            Reply::Vote(r) => Ok(r),
            _ => Err(unexpected(self.to)),
        }
    }

    async fn transfer_leader(
        &mut self,
        rpc: TransferLeaderRequest<KilnRaft>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<KilnRaft>, RPCError<KilnRaft>> {
        match self.call(Request::TransferLeader(rpc), &option).await? {
            Reply::TransferLeader(r) => Ok(r),
            _ => Err(unexpected(self.to)),
        }
    }

    async fn full_snapshot(
        &mut self,
        vote: VoteOf<KilnRaft>,
        snapshot: SnapshotOf<KilnRaft, SnapshotData>,
        cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<KilnRaft>, StreamingError<KilnRaft>> {
        tokio::select! {
            result = self.send_snapshot(vote, snapshot) => result,
            closed = cancel => Err(StreamingError::Closed(closed)),
        }
    }
}

/// The voters of a new cluster, by id.
pub type Members = BTreeMap<u64, Member>;

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(secret: &str) -> ClusterAuth {
        ClusterAuth::new("test", secret.as_bytes()).unwrap()
    }

    /// Runs `accept_peer` for node 2 on one end of a loopback connection and returns its result
    /// with the client's end.
    async fn pair(
        server_auth: ClusterAuth,
    ) -> (tokio::task::JoinHandle<io::Result<u64>>, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            accept_peer(&mut stream, &server_auth, 2).await
        });
        (server, TcpStream::connect(addr).await.unwrap())
    }

    fn hello(auth: &ClusterAuth, cluster: &str, to: u64) -> Hello {
        Hello {
            protocol: PROTOCOL,
            cluster: cluster.into(),
            from: 1,
            to,
            nonce: auth.nonce().unwrap(),
        }
    }

    #[tokio::test]
    async fn a_peer_that_knows_the_secret_is_let_in() {
        let a = auth("a secret of the cluster");
        let (server, mut client) = pair(a.clone()).await;
        let hello = hello(&a, "test", 2);
        send(&mut client, &hello).await.unwrap();
        let Answer::Challenge { nonce, proof } = receive(&mut client, 4096).await.unwrap() else {
            panic!("no challenge")
        };
        assert!(a.check(b"server", &hello, &nonce, &proof));
        // A proof for one role is not one for the other.
        assert!(!a.check(b"client", &hello, &nonce, &proof));
        send(&mut client, &Proof { proof: a.prove(b"client", &hello, &nonce) }).await.unwrap();
        assert!(matches!(receive(&mut client, 4096).await.unwrap(), Answer::Welcome));
        assert_eq!(server.await.unwrap().unwrap(), 1);
    }

    #[tokio::test]
    async fn a_peer_without_the_secret_is_refused() {
        let (server, mut client) = pair(auth("a secret of the cluster")).await;
        let wrong = auth("not the secret of the cluster");
        let hello = hello(&wrong, "test", 2);
        send(&mut client, &hello).await.unwrap();
        let Answer::Challenge { nonce, proof } = receive(&mut client, 4096).await.unwrap() else {
            panic!("no challenge")
        };
        // The client cannot check the server's proof either.
        assert!(!wrong.check(b"server", &hello, &nonce, &proof));
        // Replaying the server's own proof does not work.
        send(&mut client, &Proof { proof }).await.unwrap();
        let Answer::Refused(why) = receive(&mut client, 4096).await.unwrap() else { panic!() };
        assert_eq!(why, "authentication failed");
        assert!(server.await.unwrap().is_err());
    }

    #[tokio::test]
    async fn another_cluster_another_node_or_an_oversized_hello_is_refused() {
        let a = auth("a secret of the cluster");
        for (cluster, to, expect) in [("other", 2, "belongs to cluster"), ("test", 3, "not node 3")]
        {
            let (server, mut client) = pair(a.clone()).await;
            send(&mut client, &hello(&a, cluster, to)).await.unwrap();
            let Answer::Refused(why) = receive(&mut client, 4096).await.unwrap() else { panic!() };
            assert!(why.contains(expect), "{why}");
            assert!(server.await.unwrap().is_err());
        }
        let (server, mut client) = pair(a).await;
        client.write_all(&(1u32 << 20).to_le_bytes()).await.unwrap();
        let err = server.await.unwrap().unwrap_err();
        assert!(err.to_string().contains("beyond the limit"), "{err}");
    }

    #[test]
    fn a_short_secret_is_refused() {
        assert!(ClusterAuth::new("test", b"short").is_err());
    }
}
