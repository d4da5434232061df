# memlife — build, test, demo, bench.
#
# Optional parts are detected and can be forced: MPI=0|1 (host backend, Open MPI), CUDA=0|1
# (cuda backend: CUDA runtime + NCCL, found under CUDA_HOME), CUPTI=0|1 (kernel evidence).
# SANITIZE=1 builds everything with ASan + UBSan.
# libyaml is linked statically so the binary runs on machines without it (the GPU machine).

CC        ?= cc
CUDA_HOME ?= /usr/local/cuda
BUILD     ?= build
VERSION   := 0.1.0
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter \
           -Wformat=2 -Wno-format-nonliteral -Wvla
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE $(WARN) -Iruntime -Ianalyzer -I. \
           -DMEMLIFE_VERSION='"$(VERSION)"' -DMEMLIFE_COMMIT='"$(GIT_COMMIT)"'
LDLIBS  := -Wl,-Bstatic -lyaml -Wl,-Bdynamic -ljansson -lm

ifeq ($(SANITIZE),1)
  CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDFLAGS += -fsanitize=address,undefined
  BUILD   := build-san
  # For the test run: Open MPI's own leaks are suppressed by name (tests/lsan.supp), not by
  # turning leak detection off. Open MPI is built without frame pointers, so only the slow
  # unwinder reaches the named frames under its (by then unloaded) plugins. Malloc failures come
  # back as NULL, as without ASan: the runtime reports them (exit 3).
  export LSAN_OPTIONS ?= suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
  export ASAN_OPTIONS ?= fast_unwind_on_malloc=0:allocator_may_return_null=1
endif

# --- Open MPI (host backend) -------------------------------------------------------------------
MPI ?= $(shell command -v mpicc >/dev/null 2>&1 && echo 1 || echo 0)
ifeq ($(MPI),1)
  CFLAGS  += -DMEMLIFE_HAVE_MPI $(shell mpicc --showme:compile)
  LDLIBS  += $(shell mpicc --showme:link)
endif

# --- CUDA + NCCL (cuda backend). Plain C against the runtime API; the driver API (VMM) is reached
# through cudaGetDriverEntryPointByVersion, so the binary needs no libcuda to start on a CPU machine.
CUDA ?= $(shell test -f $(CUDA_HOME)/include/cuda_runtime.h && \
          { test -f $(CUDA_HOME)/include/nccl.h || test -f /usr/include/nccl.h; } && echo 1 || echo 0)
ifeq ($(CUDA),1)
  CFLAGS  += -DMEMLIFE_HAVE_CUDA -isystem $(CUDA_HOME)/include
  LDLIBS  += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnccl -lcudart
  CUPTI ?= $(shell test -f $(CUDA_HOME)/include/cupti.h && echo 1 || echo 0)
  ifeq ($(CUPTI),1)
    CFLAGS += -DMEMLIFE_HAVE_CUPTI
    LDLIBS += -lcupti
  endif
endif

# Sources are found in every folder below runtime/, analyzer/ and cli/ (a folder per box of the
# architecture, docs/design.md); a new file needs no edit here.
SRCS := $(sort $(shell find runtime analyzer cli -name '*.c'))
OBJS := $(SRCS:%.c=$(BUILD)/%.o)
LIB_OBJS := $(filter-out $(BUILD)/cli/main.o,$(OBJS))

.PHONY: all test test-unit test-cli test-mpi test-gpu bench demo fuzz clean
all: memlife

memlife: $(BUILD)/memlife
	@ln -sf $(BUILD)/memlife memlife

$(BUILD)/memlife: $(OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libmemlife.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

-include $(OBJS:.o=.d)

# The commit is compiled into cli/main.o (memlife --version): rebuild it when the commit, or
# whether the tree is dirty, changes; the stamp file only changes then.
$(BUILD)/version.stamp: FORCE
	@mkdir -p $(BUILD)
	@echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@
$(BUILD)/cli/main.o: $(BUILD)/version.stamp
$(BUILD)/runtime/exec/provenance.o: $(BUILD)/version.stamp
.PHONY: FORCE
FORCE:

# --- Tests -------------------------------------------------------------------------------------
# Unit tests: tests/unit/test_<module>.c, one cmocka binary each, linked against libmemlife.a.
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libmemlife.a tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(BUILD)/libmemlife.a -lcmocka $(LDLIBS)

test: memlife $(UNIT_BINS)
	@BUILD=$(BUILD) ./tests/run.sh

test-gpu: memlife
	@BUILD=$(BUILD) ./tests/run.sh --gpu

bench: memlife
	@./tests/bench.sh

demo:
	@./tests/demo.sh

fuzz:
	@./tests/fuzz.sh

clean:
	rm -rf build build-san memlife
