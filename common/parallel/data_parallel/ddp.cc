// Bucketed, overlapped gradient all-reduce.
#include "common/parallel/data_parallel/ddp.h"

#include <algorithm>
#include <unordered_map>

#include "common/kernels/elementwise.h"

namespace course::parallel {

std::vector<int64_t> gradient_bytes(nn::Module& model) {
  std::vector<int64_t> bytes;
  for (const nn::Parameter* p : model.parameters()) bytes.push_back(p->grad.nbytes());
  return bytes;
}

std::unique_ptr<DistributedDataParallel> default_ddp(nn::Module& model,
                                                     std::shared_ptr<Communicator> comm) {
  BucketPlan plan =
      plan_gradient_buckets(gradient_bytes(model), kBucketCapBytes, kFirstBucketCapBytes);
  return std::make_unique<DistributedDataParallel>(model, std::move(comm), std::move(plan));
}

void broadcast_state(nn::Module& model, Communicator& comm) {
  nn::ModuleState state = model.state();
  std::vector<WorkPtr> works;
  for (auto& [name, p] : state.parameters) works.push_back(comm.broadcast(p->value, 0));
  for (auto& [name, t] : state.buffers) works.push_back(comm.broadcast(*t, 0));
  for (auto& w : works) w->wait();
}

ChannelSumReducer sync_batch_norm(std::shared_ptr<Communicator> comm) {
  return [comm](const std::vector<Tensor*>& sums, int64_t count) {
    std::vector<WorkPtr> works;
    for (Tensor* t : sums) works.push_back(comm->allreduce(*t));
    Tensor total = Tensor::from_vector<int64_t>({count}, {1});
    comm->allreduce(total)->wait();
    for (auto& w : works) w->wait();
    return total.to_vector<int64_t>()[0];
  };
}

namespace {

std::vector<float> allreduce_values(const std::vector<float>& values, Communicator& comm,
                                    ReduceOp op) {
  Tensor t = Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
  comm.allreduce(t, op)->wait();
  return t.to_vector<float>();
}

}  // namespace

std::vector<float> allreduce_sum(const std::vector<float>& values, Communicator& comm) {
  return allreduce_values(values, comm, ReduceOp::kSum);
}

std::vector<float> allreduce_max(const std::vector<float>& values, Communicator& comm) {
  return allreduce_values(values, comm, ReduceOp::kMax);
}

float replica_divergence(nn::Module& model, Communicator& comm) {
  // Every weight, then every weight negated: one maximum gives the highest and lowest values.
  std::vector<float> weights;
  for (const nn::Parameter* p : model.parameters()) {
    const std::vector<float> values = p->value.to_vector<float>();
    weights.insert(weights.end(), values.begin(), values.end());
  }
  const size_t n = weights.size();
  for (size_t i = 0; i < n; ++i) weights.push_back(-weights[i]);
  const std::vector<float> extremes = allreduce_max(weights, comm);
  float divergence = 0;
  for (size_t i = 0; i < n; ++i) divergence = std::max(divergence, extremes[i] + extremes[n + i]);
  return divergence;
}

DistributedDataParallel::DistributedDataParallel(nn::Module& model,
                                                 std::shared_ptr<Communicator> comm,
                                                 BucketPlan plan, const DdpOptions& options,
                                                 BucketAllreduce reduce)
    : model_(model),
      comm_(std::move(comm)),
      plan_(std::move(plan)),
      options_(options),
      reduce_(std::move(reduce)),
      params_(model.state().parameters),
      device_(params_.empty() ? Device::cpu() : params_.front().second->value.device()) {
  if (!reduce_) reduce_ = [this](Tensor& t) { return comm_->allreduce(t); };
  const size_t n = params_.size();
  bucket_of_.assign(n, plan_.size());
  offset_of_.assign(n, 0);
  packed_.assign(n, false);
  for (size_t b = 0; b < plan_.size(); ++b) {
    COURSE_CHECK(!plan_[b].empty(), "DDP bucket ", b, " is empty");
    Bucket bucket;
    int64_t numel = 0;
    for (size_t i : plan_[b]) {
      COURSE_CHECK(i < n, "DDP bucket ", b, " names parameter ", i, " of a model with ", n);
      COURSE_CHECK(bucket_of_[i] == plan_.size(), "DDP parameter ", i, " (", params_[i].first,
                   ") is in two buckets");
      bucket_of_[i] = b;
      offset_of_[i] = static_cast<size_t>(numel);
      numel += params_[i].second->value.numel();
    }
    bucket.params = plan_[b];
    bucket.numel = numel;
    bucket.flat = Tensor::empty({numel}, DType::kF32, device_);
    buckets_.push_back(std::move(bucket));
  }
  for (size_t i = 0; i < n; ++i) {
    COURSE_CHECK(bucket_of_[i] < plan_.size(), "DDP parameter ", i, " (", params_[i].first,
                 ") is in no bucket");
  }
  for (auto& bucket : buckets_) bucket.pending = bucket.params.size();
  std::unordered_map<const nn::Parameter*, size_t> index;
  for (size_t i = 0; i < n; ++i) index[params_[i].second] = i;
  model_.set_grad_ready_hook([this, index](nn::Parameter& p) {
    const auto it = index.find(&p);
    if (it != index.end() && reducing() && options_.overlap) {
      pack(it->second);
      launch_ready_buckets();
    }
  });
  broadcast_state(model_, *comm_);
}

DistributedDataParallel::~DistributedDataParallel() { model_.set_grad_ready_hook({}); }

void DistributedDataParallel::when_bucket_reduced(std::function<void(size_t)> reduced) {
  reduced_ = std::move(reduced);
  for (Bucket& bucket : buckets_) bucket.flat = Tensor();
}

void DistributedDataParallel::pack(size_t i) {
  COURSE_CHECK(!packed_[i], "the gradient of ", params_[i].first,
               " became ready twice in one backward pass (a parameter used twice is not "
               "supported by DDP)");
  packed_[i] = true;
  nn::Parameter& p = *params_[i].second;
  if (!p.grad.defined()) p.grad = zeros(p.value.shape(), DType::kF32, p.value.device());  // unused
  const Tensor& grad = p.grad;
  Bucket& bucket = buckets_[bucket_of_[i]];
  if (!bucket.flat.defined()) bucket.flat = Tensor::empty({bucket.numel}, DType::kF32, device_);
  copy_bytes(static_cast<float*>(bucket.flat.data()) + offset_of_[i], bucket.flat.device(),
             grad.data(), grad.device(), grad.nbytes());
  --bucket.pending;
}

void DistributedDataParallel::launch(Bucket& bucket) {
  bucket.work = reduce_(bucket.flat);
  ++stats_.collectives;
  stats_.bytes += static_cast<int64_t>(bucket.flat.nbytes());
}

void DistributedDataParallel::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    launch(buckets_[next_launch_++]);
  }
  // MPI moves non-blocking collectives forward only inside MPI calls.
  for (size_t b = 0; b < next_launch_; ++b) buckets_[b].work->test();
}

std::string DistributedDataParallel::unready_parameters(const Bucket& bucket) const {
  std::string names;
  for (size_t i : bucket.params) {
    if (!packed_[i]) names += (names.empty() ? "" : ", ") + params_[i].first;
  }
  return names;
}

DdpStats DistributedDataParallel::stats() {
  DdpStats s = stats_;
  if (exposed_) s.exposed_seconds = exposed_->total_seconds();
  return s;
}

void DistributedDataParallel::reset_stats() {
  stats_ = {};
  exposed_.reset();
}

void DistributedDataParallel::finish_backward() {
  if (!reducing()) return;
  if (!exposed_ && !buckets_.empty()) {
    exposed_ = std::make_unique<IntervalTimer>(device_);
  }
  if (exposed_) exposed_->start();
  for (; next_launch_ < buckets_.size(); ++next_launch_) {
    Bucket& bucket = buckets_[next_launch_];
    COURSE_CHECK(!options_.overlap || bucket.pending == 0 || options_.find_unused_parameters,
                 "DDP: no gradient reached ", unready_parameters(bucket),
                 " in this backward pass; pass --find-unused-parameters if the model does not "
                 "use every parameter in every step");
    for (size_t i : bucket.params) {
      if (!packed_[i]) pack(i);
    }
    launch(bucket);
  }
  const float inverse_size = 1.0f / static_cast<float>(comm_->size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    bucket.work->wait();
    bucket.work.reset();
    scale_(bucket.flat, inverse_size);
    for (size_t i : bucket.params) {
      Tensor& grad = params_[i].second->grad;
      copy_bytes(grad.data(), grad.device(),
                 static_cast<const float*>(bucket.flat.data()) + offset_of_[i],
                 bucket.flat.device(), grad.nbytes());
      packed_[i] = false;
    }
    bucket.pending = bucket.params.size();
    if (reduced_) {
      reduced_(b);
      bucket.flat = Tensor();
    }
  }
  next_launch_ = 0;
  ++stats_.steps;
  if (exposed_) exposed_->stop();
}

}  // namespace course::parallel
