// How a communicator comes to be and ends: MPI's start (the world, once) and end (at exit, or
// every rank aborted when one fails), splits into sub-groups, the ranks that share a node, and
// the engine a communicator's device tensors take (NCCL with a GPU per rank, else MPI staged
// through pinned host memory). The collectives are in communicator.cc.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "common/core/exit_codes.h"
#include "common/core/mpi_check.h"
#include "common/parallel/comm/communicator.h"
#include "common/parallel/comm/mpi_comm.h"
#include "common/parallel/comm/mpi_work.h"
#include "common/parallel/comm/nccl_engine.h"

namespace course::parallel {

namespace {

Communicator* world_instance = nullptr;

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Every NCCL communicator of the world goes before MPI does (its destruction may talk to the
  // other ranks); those of sub-communicators went with them, when the lab's objects did.
  if (world_instance != nullptr) world_instance->release_device();
  if (mpi_timed_out) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
}

// The ranks of `comm` that share this rank's node (the caller frees it).
MPI_Comm node_of(MPI_Comm comm) {
  MPI_Comm node;
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  return node;
}

// This rank's place among the ranks that share its node, and their number.
std::pair<int, int> node_rank_and_size(MPI_Comm comm) {
  MPI_Comm node = node_of(comm);
  int local = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(node, &local));
  MPI_CHECK(MPI_Comm_size(node, &size));
  MPI_CHECK(MPI_Comm_free(&node));
  return {local, size};
}

}  // namespace

int finish_job(int code) {
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  // Every rank stops together when preempted (the decision is all-reduced), and ends cleanly.
  if (code == kExitDone || code == kExitPreempted || !initialized || finalized) return code;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  return code;
}

Communicator::Communicator(std::unique_ptr<MpiComm> comm, bool owned, bool with_ring)
    : comm_(std::move(comm)), owned_(owned) {
  MPI_CHECK(MPI_Comm_set_errhandler(comm_->comm, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_->comm, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_->comm, &size_));
  std::tie(local_rank_, local_size_) = node_rank_and_size(comm_->comm);
  if (with_ring && size_ == 2) {
    auto ring = std::make_unique<MpiComm>();
    MPI_CHECK(MPI_Comm_dup(comm_->comm, &ring->comm));
    ring_.reset(new Communicator(std::move(ring), true, false));
  }
}

void Communicator::set_timeout(double seconds) {
  COURSE_CHECK(seconds > 0, "the communication timeout must be positive, got ", seconds);
  timeout_ = seconds;
  if (ring_) ring_->set_timeout(seconds);
}

Communicator::~Communicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) MPI_Comm_free(&comm_->comm);
}

std::shared_ptr<Communicator> Communicator::world() {
  static std::once_flag once;
  static std::shared_ptr<Communicator> world;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      // A process started without mpirun or srun runs as an isolated singleton. Open MPI 4
      // would otherwise start a local daemon whose PMIx server tries munge first: 2-5 s lost
      // per run where munge is installed but its daemon not running (as after ./setup.sh,
      // which installs it for Slurm). A launched process never reads this setting, and one the
      // user set is kept.
      setenv("OMPI_MCA_ess_singleton_isolated", "1", /*overwrite=*/0);
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      std::atexit(finalize_at_exit);
    }
    world.reset(new Communicator(std::make_unique<MpiComm>(MpiComm{MPI_COMM_WORLD}), false));
    world_instance = world.get();
  });
  return world;
}

std::shared_ptr<Communicator> Communicator::split(int color, int key) const {
  COURSE_CHECK(color >= 0, "split colours must not be negative, got ", color);
  auto sub = std::make_unique<MpiComm>();
  MPI_CHECK(MPI_Comm_split(comm_->comm, color, key, &sub->comm));
  std::shared_ptr<Communicator> part(new Communicator(std::move(sub), true));
  part->set_timeout(timeout_);  // a stalled rank is found as fast in a sub-group
  // The rows of a device grid are device communicators too.
  if (device_.is_accelerator()) part->use_device(device_);
  return part;
}

bool Communicator::ranks_share(Device device) const {
  MPI_Comm node = node_of(comm_->comm);
  int node_size = 1;
  MPI_CHECK(MPI_Comm_size(node, &node_size));
  std::vector<int> devices(static_cast<size_t>(node_size));
  int mine = static_cast<int>(device.kind) * 1024 + device.index;
  {
    MpiWork gather("the ranks' devices", rank_, timeout_, {});
    MPI_CHECK(
        MPI_Iallgather(&mine, 1, MPI_INT, devices.data(), 1, MPI_INT, node, gather.request()));
    gather.wait();
  }
  MPI_CHECK(MPI_Comm_free(&node));
  std::sort(devices.begin(), devices.end());
  int shared = std::adjacent_find(devices.begin(), devices.end()) != devices.end();
  MpiWork agree("the ranks' agreement on sharing devices", rank_, timeout_, {});
  MPI_CHECK(
      MPI_Iallreduce(MPI_IN_PLACE, &shared, 1, MPI_INT, MPI_LOR, comm_->comm, agree.request()));
  agree.wait();
  return shared != 0;
}

void Communicator::use_device(Device device) {
  COURSE_CHECK(device.is_accelerator(), "use_device(", device.str(),
               "): CPU tensors always go to the MPI engine");
  if (device_ == device) return;
  require_device(device);
  nccl_.reset();
  staged_ = ranks_share(device);
  if (staged_) {
    static std::once_flag said;
    if (rank_ == 0) {
      std::call_once(said, [&] {
        std::fprintf(stderr,
                     "note: ranks of one node share %s: their collectives go through MPI, staged "
                     "through pinned host memory (NCCL needs a device per rank)\n",
                     device.str().c_str());
      });
    }
  } else if (device.is_cuda()) {
    nccl_ =
        std::make_unique<NcclEngine>(rank_, size_, device, timeout_, [this](void* bytes, int n) {
          MpiWork work("the NCCL unique id's broadcast", rank_, timeout_, {});
          MPI_CHECK(MPI_Ibcast(bytes, n, MPI_BYTE, 0, comm_->comm, work.request()));
          work.wait();
        });
  }
  device_ = device;
}

void Communicator::release_device() {
  nccl_.reset();
  device_ = Device::cpu();
}

}  // namespace course::parallel
