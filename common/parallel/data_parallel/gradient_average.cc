// Every gradient's all-reduce launched, then each waited for (and divided by the rank count).
#include "common/parallel/data_parallel/gradient_average.h"

#include "common/kernels/elementwise.h"

namespace course::parallel {

namespace {

void reduce_gradients(const std::vector<nn::Parameter*>& parameters, Communicator& comm,
                      float scale) {
  if (comm.size() == 1) return;
  std::vector<WorkPtr> sums;
  for (nn::Parameter* p : parameters) sums.push_back(comm.allreduce(p->grad));
  for (size_t i = 0; i < parameters.size(); ++i) {
    sums[i]->wait();
    if (scale != 1.0f) scale_(parameters[i]->grad, scale);
  }
}

}  // namespace

void average_gradients(const std::vector<nn::Parameter*>& parameters, Communicator& comm) {
  reduce_gradients(parameters, comm, 1.0f / static_cast<float>(comm.size()));
}

void sum_gradients(const std::vector<nn::Parameter*>& parameters, Communicator& comm) {
  reduce_gradients(parameters, comm, 1.0f);
}

Tensor sum_over_ranks(Tensor value, Communicator& comm) {
  if (comm.size() > 1) comm.allreduce(value)->wait();
  return value;
}

float sum_over_ranks(float value, Communicator& comm) {
  if (comm.size() == 1) return value;
  Tensor total = Tensor::from_vector<float>({value}, {1});  // a host tensor: MPI's engine
  comm.allreduce(total)->wait();
  return total.to_vector<float>()[0];
}

}  // namespace course::parallel
