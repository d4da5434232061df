/* SPDX-License-Identifier: MIT */
/* host_mpi_min.c — the minimal MPI program that memlife's host backend is timed against
 * (tests/bench/host_mpi.sh): what the seed's AllReduce schedule asks of each rank and nothing
 * else.  MPI_Init, one page-aligned buffer of M bytes (float32), one in-place MPI_Allreduce
 * (sum), free, MPI_Finalize.  Usage: mpirun -np N host_mpi_min [M_BYTES] (default 256 MiB). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    long long bytes = argc > 1 ? atoll(argv[1]) : 256LL << 20;
    void *buf = NULL;
    if (bytes <= 0 || posix_memalign(&buf, (size_t)sysconf(_SC_PAGESIZE), (size_t)bytes)) {
        fprintf(stderr, "host_mpi_min: no buffer of %lld bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    free(buf);
    MPI_Finalize();
    return rc == MPI_SUCCESS ? 0 : 1;
}
