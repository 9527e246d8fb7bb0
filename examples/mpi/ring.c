// SPDX-License-Identifier: MIT
/*
 * ring: the smallest MPI program that proves the ranks really talk.
 *
 * 1. A token travels around all ranks LAPS times; every hop adds one, so
 *    each rank knows exactly which value it must receive at every lap.
 * 2. MPI_Allreduce sums a small vector in which rank r contributes
 *    (r + 1) * (i + 1) to element i; the result must be the closed form
 *    (i + 1) * n * (n + 1) / 2.  (On ExaNet nodes Open MPI hands this call
 *    to the NI's collective unit, coll/exanet.)
 *
 * Every rank prints one line, "ok ..." or what went wrong, and exits 0 only
 * when both checks passed, so mpirun's exit status is the verdict.
 *
 * Build: mpicc -std=c11 -Wall -Wextra -o ring ring.c
 * Run:   mpirun -np 2 ./ring [laps]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_LAPS 10
#define VEC_LEN 8
#define TOKEN_TAG 1

/* Pass the token around; returns the number of wrong values seen. */
static int token_ring(int rank, int size, long laps, char *why, size_t why_len)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	int errors = 0;

	for (long lap = 0; lap < laps; lap++) {
		/* Rank 0 starts each lap with the hops done so far plus one. */
		long token = lap * size + 1, expect, got;
		MPI_Request req;

		if (rank == 0) {
			/*
			 * Non-blocking send: with one rank, rank 0 is its own
			 * neighbour and a blocking send could wait forever.
			 */
			MPI_Isend(&token, 1, MPI_LONG, next, TOKEN_TAG, MPI_COMM_WORLD, &req);
			MPI_Recv(&got, 1, MPI_LONG, prev, TOKEN_TAG, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Wait(&req, MPI_STATUS_IGNORE);
			expect = (lap + 1) * size;
		} else {
			MPI_Recv(&got, 1, MPI_LONG, prev, TOKEN_TAG, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			expect = lap * size + rank;
			token = got + 1;
			MPI_Send(&token, 1, MPI_LONG, next, TOKEN_TAG, MPI_COMM_WORLD);
		}
		if (got != expect && errors++ == 0)
			snprintf(why, why_len, "lap %ld: token %ld from rank %d, expected %ld",
				 lap, got, prev, expect);
	}
	return errors;
}

/* Sum a vector over all ranks; returns the number of wrong elements. */
static int check_allreduce(int rank, int size, char *why, size_t why_len)
{
	long mine[VEC_LEN], sum[VEC_LEN];
	int errors = 0;

	for (int i = 0; i < VEC_LEN; i++)
		mine[i] = (long)(rank + 1) * (i + 1);
	MPI_Allreduce(mine, sum, VEC_LEN, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < VEC_LEN; i++) {
		long expect = (long)(i + 1) * size * (size + 1) / 2;

		if (sum[i] != expect && errors++ == 0)
			snprintf(why, why_len, "allreduce element %d is %ld, expected %ld",
				 i, sum[i], expect);
	}
	return errors;
}

int main(int argc, char **argv)
{
	char host[MPI_MAX_PROCESSOR_NAME], why[160] = "";
	int rank, size, len, errors;
	long laps = argc > 1 ? strtol(argv[1], NULL, 0) : DEFAULT_LAPS;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	if (laps < 1) {
		if (rank == 0)
			fprintf(stderr, "usage: %s [laps >= 1]\n", argv[0]);
		MPI_Finalize();
		return 2;
	}

	errors = token_ring(rank, size, laps, why, sizeof(why));
	if (!errors)
		errors = check_allreduce(rank, size, why, sizeof(why));

	if (errors)
		printf("FAIL rank %d of %d on %s: %s\n", rank, size, host, why);
	else
		printf("ok rank %d of %d on %s: %ld laps of the token, allreduce of %d elements\n",
		       rank, size, host, laps, VEC_LEN);
	fflush(stdout);
	MPI_Finalize();
	return errors ? 1 : 0;
}
