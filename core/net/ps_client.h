// PsClient: a worker's connection to its job, in three parts served by one
// I/O thread (core/net/client_io_loop.h), as ps-lite's Postoffice and
// KVWorker sit on its Van:
//   * membership() (core/net/membership_client.h): registration with the
//     coordinator, the cluster map (this worker's rank, the servers' and FC
//     workers' addresses), heartbeats with checkpoint reports, and the
//     coordinator connection other services talk over (the knob lease
//     client, runtime/knob_lease_client.h);
//   * kv() (core/net/kv_client.h): push, pull and init of tensors on the
//     parameter servers, with tickets, resends and shared-memory lanes.
// Connect() joins the job, connects to every server and starts the I/O
// thread; a refusal or a silent coordinator fails it, naming why.
//
//   STRATA_ASSIGN_OR_RETURN(std::unique_ptr<PsClient> client, PsClient::Connect(options));
//   KvClient& kv = client->kv();
//   STRATA_RETURN_IF_ERROR(kv.SetPlan(plan));
//   STRATA_RETURN_IF_ERROR(kv.Wait(kv.Push(step, key, param->grad)));
//   STRATA_RETURN_IF_ERROR(client->Done());
#ifndef STRATA_CORE_NET_PS_CLIENT_H_
#define STRATA_CORE_NET_PS_CLIENT_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "core/net/client_io_loop.h"
#include "core/net/kv_client.h"
#include "core/net/membership_client.h"
#include "core/net/ps_client_options.h"
#include "core/util/wait_observer.h"

namespace strata {

class PsClient {
 public:
  static absl::StatusOr<std::unique_ptr<PsClient>> Connect(const PsClientOptions& options);
  ~PsClient();  // stops the I/O thread first

  MembershipClient& membership() { return *membership_; }
  const MembershipClient& membership() const { return *membership_; }
  KvClient& kv() { return *kv_; }
  const KvClient& kv() const { return *kv_; }
  int rank() const { return membership_->rank(); }
  const ClusterMap& map() const { return membership_->map(); }

  // Tells every server this worker has finished, with the checkpoint parts
  // membership reports (the coordinator may wait for them to settle the
  // final epoch).
  absl::Status Done() { return kv_->Done(membership_->checkpoint_report()); }
  // Told of every wait on this connection, for the servers' or the
  // coordinator's answers (null: none). Set before the first wait.
  void set_wait_observer(WaitObserver* observer) {
    membership_->set_wait_observer(observer);
    kv_->set_wait_observer(observer);
  }

  // Everything this connection sent and received: coordinator, server
  // sockets and lanes.
  uint64_t bytes_sent() const { return membership_->bytes_sent() + kv_->bytes_sent(); }
  uint64_t bytes_received() const { return membership_->bytes_received() + kv_->bytes_received(); }

 private:
  PsClient() = default;

  // Declared first: the sockets of the parts close before it does.
  zmq::context_t context_{1};
  ClientIoLoop loop_;
  std::unique_ptr<MembershipClient> membership_;
  std::unique_ptr<KvClient> kv_;
};

}  // namespace strata

#endif  // STRATA_CORE_NET_PS_CLIENT_H_
