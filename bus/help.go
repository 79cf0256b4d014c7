package bus

// The help of the verbs that run this package, kept beside the code it
// describes so that the two change together.

// AccountHelp is mesh bus account's help: the trust LoadExternalAccount
// makes and the configuration ServerConfig prints.
const AccountHelp = `Make (once, in DATA/bus-account, mode 0600) the trust of a NATS cluster
dedicated to meshplane, in operator JWT mode, and print the configuration
fragment every server of the cluster takes (also in
DATA/bus-account/nats-server.conf):

  operator, system_account   meshplane's operator and its system account
  resolver: full             each server keeps the account JWTs in its own
                             directory (meshplane-jwt, relative to its working
                             directory), so that a re-signed account JWT can be
                             pushed to every server
  resolver_preload           the system account's and the MESH account's JWTs
                             (the MESH account has JetStream, at most 64
                             consumers, and a signing key)
  max_payload: 8MB           declarations carry whole files

The operator adds it to each server's configuration, beside the server's own
listen, cluster, jetstream and tls blocks, and starts (or reloads) them. Then
the controller runs against them:

  mesh up --nats nats://a:4222,nats://b:4222,nats://c:4222 \
    --nats-creds DATA/bus-account/controller.creds \
    --nats-account-seed DATA/bus-account/signing.nk \
    --nats-operator-seed DATA/bus-account/operator-signing.nk \
    --nats-system-creds DATA/bus-account/system.creds [--nats-ca CA.pem]

Once the controller ran (it makes the bucket and the stream), check the
cluster as meshplane needs it (the servers' version, the MESH account's
consumer limit, the bucket's republish and limits, that a node's user can
create no consumer), exit 1 if one check fails:

  mesh bus check --nats nats://a:4222,... \
    --nats-creds DATA/bus-account/controller.creds \
    --nats-account-seed DATA/bus-account/signing.nk

An account made by an older meshplane has no consumer limit until its JWT
from this fragment is on the servers again (or nsc edit account MESH
--js-consumer 64).

controller.creds is the controller's user (every right in MESH), signed by
the signing key in signing.nk, which the controller keeps to mint each node's
user (mesh agent join). To revoke one (mesh node revoke), the controller signs
the MESH account's JWT anew with its revocation list, with the operator's
signing key in operator-signing.nk, and sends it to the servers' resolvers
as the system account's user in system.creds
($SYS.REQ.ACCOUNT.<id>.CLAIMS.UPDATE, as nsc push does); the servers close
the revoked user's connection and refuse it from then on. Leave those two
flags out and revocations are recorded but not pushed (an operator signing
key can sign any account of the operator). operator.nk and mesh-account.nk
can be taken offline once the configuration is on the servers. Running it
again prints the same trust (the keys are kept; the JWTs are signed anew:
put the fragment on the servers again only with a revocation pushed after,
since its preloaded MESH account JWT carries none).`
