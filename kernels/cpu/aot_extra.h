// The slice of MindSpore's custom-operator ABI that the aot entry points use.
//
// MindSpore 2.10 hands an `AotExtra*` to every aot kernel and infer function; the
// wheel only ships a header that drags in MindSpore's internal headers, so this file
// declares a class with the same virtual-table order to call through. The library
// must be compiled with -D_GLIBCXX_USE_CXX11_ABI=0 (MindSpore uses the old libstdc++
// ABI): the attribute getters take std::string by value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mindspore {

// Values of MindSpore's TypeId enum (mindapi/base/type_id.h, 2.10) for the dtypes we meet.
enum TypeId : int {
  kNumberTypeFloat16 = 42,
  kNumberTypeFloat32 = 43,
  kNumberTypeFloat64 = 44,
  kNumberTypeBFloat16 = 45,
};

class AotKernelData {
 public:
  virtual ~AotKernelData() = default;
};

// Same virtual functions, in the same order, and the same data members as
// MindSpore's AotExtra; only the access control differs.
class AotExtra {
 public:
  virtual ~AotExtra() = default;
  virtual bool HasAttr(std::string name) = 0;
  virtual bool GetAttrBool(std::string name) = 0;
  virtual int64_t GetAttrInt(std::string name) = 0;
  virtual float GetAttrFloat(std::string name) = 0;
  virtual std::string GetAttrStr(std::string name) = 0;
  virtual std::vector<int64_t> GetAttrIntVec(std::string name) = 0;
  virtual std::vector<float> GetAttrFloatVec(std::string name) = 0;
  virtual std::vector<std::vector<int64_t>> GetAttrInt2DVec(std::string name) = 0;
  virtual std::vector<std::vector<float>> GetAttrFloat2DVec(std::string name) = 0;

 private:
  std::vector<size_t> workspace_;
  AotKernelData *kernel_data_{nullptr};
};

}  // namespace mindspore
