// SPDX-License-Identifier: MIT
// _virtual_cuda_hooks.cpp — for a PyTorch built without CUDA, loaded before torch is: says to
// ATen that a CUDA device exists, so that fake CUDA tensors (FakeTensorMode) work as on a CUDA
// build without a GPU.
//   - the CUDA hooks ATen creates on first use answer "built, available, one device": the
//     autograd engine asks the accelerator for the current stream of every CUDA gradient, and
//     a build without CUDA has no accelerator to ask. They must be registered before torch's
//     first call for them, hence before `import torch`.
//   - c10's FakeGuardImpl is the CUDA device guard: autograd's input metadata, indexing,
//     Tensor.copy_ and the new_* factories take one, and without it they abort the process.
// Nothing else changes: no CUDA tensor can hold data, and a real allocation or kernel on "cuda"
// still fails. memlife._virtual_cuda compiles this once per torch (one g++ call) and loads it.
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/FakeGuardImpl.h>
#include <Python.h>

namespace at {
struct MemlifeVirtualCUDAHooks : public CUDAHooksInterface {
  explicit MemlifeVirtualCUDAHooks(CUDAHooksArgs) {}
  void init() const override {}
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasCUDA() const override { return true; }
  DeviceIndex deviceCount() const override { return 1; }
  DeviceIndex current_device() const override { return 0; }
  DeviceIndex getCurrentDevice() const override { return 0; }
  int getNumGPUs() const override { return 1; }
  bool hasPrimaryContext(DeviceIndex) const override { return true; }
};
// ATen creates the hooks registered under the name "CUDAHooks" (getCUDAHooks()).
C10_REGISTER_TYPED_CLASS(CUDAHooksRegistry, "CUDAHooks", MemlifeVirtualCUDAHooks);
}  // namespace at

static c10::impl::DeviceGuardImplRegistrar memlife_virtual_cuda_guard(
    c10::DeviceType::CUDA, new c10::impl::FakeGuardImpl<c10::DeviceType::CUDA>());

static struct PyModuleDef memlife_module = {PyModuleDef_HEAD_INIT, "memlife_virtual_cuda_hooks",
                                            NULL, -1, NULL};
PyMODINIT_FUNC PyInit_memlife_virtual_cuda_hooks(void) { return PyModule_Create(&memlife_module); }
