// Pinocchio's second-order derivatives of inverse dynamics (ComputeRNEASecondOrderDerivatives, C++
// only: pin's Python bindings do not expose it), timed per call next to computeRNEADerivatives,
// computeABADerivatives and rnea, and its four tensors of the leading states written out. A peer
// of kronjax's second-order derivatives (issue 41); bench/_pinocchio_cpp.py builds and runs it.
//
// Usage: second_order URDF FREE_FLYER STATES K OUT MIN_SECONDS ROUNDS
//   URDF         the robot (Pinocchio's URDF parser, mimic joints independent)
//   FREE_FLYER   1: a pinocchio::JointModelFreeFlyer root joint; 0: the URDF's fixed base
//   STATES       float64, row-major N x (nq + 2 nv): each row q (nq), v (nv), a (nv), Pinocchio's
//                layout (a free-flyer's q: position, then the quaternion x, y, z, w); N from its size
//   K            the tensors of states 0..K-1 go to OUT
//   OUT          float64, for each of the K states, in this order: d2tau_dqdq, d2tau_dvdv,
//                dtau_dqdv, dtau_dadq, each nv^3 values in Eigen::Tensor's own (column-major)
//                storage: tensor(i, j, l) at offset i + nv j + nv^2 l (the first index fastest)
//   MIN_SECONDS  each timing round loops over the N states until at least this long
//   ROUNDS       the number of rounds per function (the median is reported, with min and max)
// stdout: JSON {"nq", "nv", "n_states", "timings_us": {name: {"median", "min", "max", "rounds"}}},
// microseconds per call, one thread. Names: rnea, rnea_derivatives, second_order (the 4 setZero
// that the header requires, then ComputeRNEASecondOrderDerivatives), second_order_setzero (the 4
// setZero alone: the floor of writing 4 nv^3 outputs), aba_derivatives.
//
// Build (bench/_pinocchio_cpp.py runs it; PREFIX = site-packages/cmeel.prefix of the pin wheel,
// EIGEN / URDFH = the include dirs of the cmeel-eigen 3.4.1 and cmeel-urdfdom-headers 3.0.0 wheels,
// the ones pin 4.1.0 was built with; they are only pin's build extras, so installed on their own):
//   g++ -std=c++17 -O3 -march=native -DNDEBUG -DEIGEN_MAX_ALIGN_BYTES=16 -DEIGEN_MALLOC_ALREADY_ALIGNED=1 \
//       -DPINOCCHIO_WITH_URDFDOM -DPINOCCHIO_URDFDOM_HEADERS_MAJOR_VERSION=3 \
//       -DPINOCCHIO_URDFDOM_HEADERS_MINOR_VERSION=0 -DPINOCCHIO_URDFDOM_HEADERS_PATCH_VERSION=0 \
//       -DBOOST_MPL_LIMIT_LIST_SIZE=30 -DBOOST_MPL_LIMIT_VECTOR_SIZE=30 \
//       -DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS -DBOOST_FUSION_INVOKE_MAX_ARITY=12 \
//       -I$PREFIX/include -I$EIGEN -I$URDFH second_order.cpp -o second_order \
//       -L$PREFIX/lib -Wl,-rpath,$PREFIX/lib -lpinocchio_parsers -lpinocchio_default
// The defines are those of pin's CMake targets pinocchio_headers and pinocchio_parsers
// (lib/cmake/pinocchio/pinocchioTargets.cmake), less PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION: without
// it every algorithm is compiled here from the headers with -march=native (with it, rnea and the
// first-order derivatives would call the wheel's SSE2-only instantiations; the second-order one
// is header-only either way). The parser alone comes from libpinocchio_parsers, which fills the
// Model across the library boundary, and the wheel is built for SSE2 (Eigen's 16-byte alignment,
// glibc's malloc/free for its heap arrays). Under -march=native (AVX) Eigen would align to 32 and
// allocate with its own handmade aligned malloc, whose free of the library's arrays segfaults (seen:
// in ~ModelTpl inside urdf::buildModel): -DEIGEN_MAX_ALIGN_BYTES=16 keeps the library's object
// layout, -DEIGEN_MALLOC_ALREADY_ALIGNED=1 its allocator. AVX still vectorises, with unaligned
// loads.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unsupported/Eigen/CXX11/Tensor>

#include "pinocchio/parsers/urdf.hpp"
#include "pinocchio/algorithm/aba-derivatives.hpp"
#include "pinocchio/algorithm/rnea.hpp"
#include "pinocchio/algorithm/rnea-derivatives.hpp"
#include "pinocchio/algorithm/rnea-second-order-derivatives.hpp"

namespace
{
  using Clock = std::chrono::steady_clock;
  using Tensor3 = Eigen::Tensor<double, 3>;

  struct Stats
  {
    double median, min, max;
    int rounds;
  };

  // per-call microseconds of body(k) over k = 0..n-1, looped until min_seconds, in each of rounds
  template<typename Body>
  Stats time_rounds(Body body, long n, double min_seconds, int rounds)
  {
    for (long k = 0; k < n; ++k)
      body(k); // warm-up pass
    std::vector<double> per_call;
    for (int r = 0; r < rounds; ++r)
    {
      long calls = 0;
      const auto start = Clock::now();
      double elapsed = 0;
      do
      {
        for (long k = 0; k < n; ++k)
          body(k);
        calls += n;
        elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      } while (elapsed < min_seconds);
      per_call.push_back(elapsed / double(calls) * 1e6);
    }
    std::sort(per_call.begin(), per_call.end());
    const size_t m = per_call.size();
    const double median =
      m % 2 ? per_call[m / 2] : 0.5 * (per_call[m / 2 - 1] + per_call[m / 2]);
    return {median, per_call.front(), per_call.back(), rounds};
  }

  void json_stats(std::ostream & os, const char * name, const Stats & s, bool last)
  {
    char buffer[256];
    std::snprintf(
      buffer, sizeof buffer,
      "    \"%s\": {\"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"rounds\": %d}%s\n", name,
      s.median, s.min, s.max, s.rounds, last ? "" : ",");
    os << buffer;
  }
} // namespace

int main(int argc, char ** argv)
{
  if (argc != 8)
  {
    std::cerr << "usage: " << argv[0]
              << " URDF FREE_FLYER(0|1) STATES K OUT MIN_SECONDS ROUNDS\n";
    return 2;
  }
  try
  {
    const std::string urdf = argv[1];
    const bool free_flyer = std::string(argv[2]) == "1";
    const std::string states_path = argv[3];
    const long k_out = std::stol(argv[4]);
    const std::string out_path = argv[5];
    const double min_seconds = std::stod(argv[6]);
    const int rounds = std::stoi(argv[7]);

    pinocchio::Model model;
    if (free_flyer)
      pinocchio::urdf::buildModel(urdf, pinocchio::JointModelFreeFlyer(), model);
    else
      pinocchio::urdf::buildModel(urdf, model);
    pinocchio::Data data(model);
    const long nq = model.nq, nv = model.nv, width = nq + 2 * nv;

    std::ifstream in(states_path, std::ios::binary | std::ios::ate);
    if (!in)
      throw std::runtime_error("cannot open " + states_path);
    const long bytes = long(in.tellg());
    if (bytes % long(width * sizeof(double)) != 0 || bytes == 0)
      throw std::runtime_error(
        states_path + ": size is not a positive multiple of (nq + 2 nv) doubles, nq = "
        + std::to_string(nq) + ", nv = " + std::to_string(nv));
    const long n = bytes / long(width * sizeof(double));
    // column k of this col-major matrix is row k of the row-major file
    Eigen::MatrixXd states(width, n);
    in.seekg(0);
    in.read(reinterpret_cast<char *>(states.data()), bytes);
    if (k_out > n)
      throw std::runtime_error("K exceeds the number of states");
    auto q = [&](long k) { return states.col(k).segment(0, nq); };
    auto v = [&](long k) { return states.col(k).segment(nq, nv); };
    auto a = [&](long k) { return states.col(k).segment(nq + nv, nv); };

    // the outputs, allocated once; zeroed per call as the header requires
    Tensor3 dqdq(nv, nv, nv), dvdv(nv, nv, nv), dqdv(nv, nv, nv), dadq(nv, nv, nv);
    auto zero = [&]() {
      dqdq.setZero();
      dvdv.setZero();
      dqdv.setZero();
      dadq.setZero();
    };
    auto second_order = [&](long k) {
      zero();
      pinocchio::ComputeRNEASecondOrderDerivatives(
        model, data, q(k), v(k), a(k), dqdq, dvdv, dqdv, dadq);
    };

    {
      std::ofstream out(out_path, std::ios::binary);
      if (!out)
        throw std::runtime_error("cannot open " + out_path);
      const std::streamsize size = std::streamsize(nv * nv * nv * sizeof(double));
      for (long k = 0; k < k_out; ++k)
      {
        second_order(k);
        for (const Tensor3 * t : {&dqdq, &dvdv, &dqdv, &dadq})
          out.write(reinterpret_cast<const char *>(t->data()), size);
      }
    }

    const Stats s_rnea = time_rounds(
      [&](long k) { pinocchio::rnea(model, data, q(k), v(k), a(k)); }, n, min_seconds, rounds);
    const Stats s_d1 = time_rounds(
      [&](long k) { pinocchio::computeRNEADerivatives(model, data, q(k), v(k), a(k)); }, n,
      min_seconds, rounds);
    const Stats s_d2 = time_rounds(second_order, n, min_seconds, rounds);
    // the setZero floor: the same loop shape, reading a state so that nothing is hoisted out
    volatile double sink = 0;
    const Stats s_zero = time_rounds(
      [&](long k) {
        zero();
        dqdq(0, 0, 0) = a(k)[0];
        sink = sink + dqdq(0, 0, 0);
      },
      n, min_seconds, rounds);
    // ABA's derivatives at tau = the state's rnea (so that ddq = a): tau computed outside the loop
    Eigen::MatrixXd taus(nv, n);
    for (long k = 0; k < n; ++k)
      taus.col(k) = pinocchio::rnea(model, data, q(k), v(k), a(k));
    const Stats s_aba = time_rounds(
      [&](long k) { pinocchio::computeABADerivatives(model, data, q(k), v(k), taus.col(k)); }, n,
      min_seconds, rounds);

    std::cout << "{\n  \"nq\": " << nq << ",\n  \"nv\": " << nv << ",\n  \"n_states\": " << n
              << ",\n  \"timings_us\": {\n";
    json_stats(std::cout, "rnea", s_rnea, false);
    json_stats(std::cout, "rnea_derivatives", s_d1, false);
    json_stats(std::cout, "second_order", s_d2, false);
    json_stats(std::cout, "second_order_setzero", s_zero, false);
    json_stats(std::cout, "aba_derivatives", s_aba, true);
    std::cout << "  }\n}\n";
  }
  catch (const std::exception & e)
  {
    std::cerr << "second_order: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
