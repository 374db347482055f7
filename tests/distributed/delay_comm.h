// The delay of tests/distributed/delay_comm.cpp's all-reduce.
#pragma once

namespace paradnn::test {

constexpr int kAllReduceDelayUs = 20000;

}  // namespace paradnn::test
