/* perflab profile test workload: events with markers carrying CLOCK_MONOTONIC ns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static long long now_ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
static volatile double sink;
static double __attribute__((noinline)) hot_kernel(long n, int scale){double s=0;for(long i=0;i<n;i++)s+=(double)(i%7)*scale/(1.0+(i&15));return s;}
static double __attribute__((noinline)) other_work(long n){double s=0;for(long i=0;i<n;i++)s+=(double)(i%5)*0.5;return s;}
int main(int argc,char**argv){
  int events=argc>1?atoi(argv[1]):5; int hot=argc>2?atoi(argv[2]):2; long n=argc>3?atol(argv[3]):3000000;
  int pause_ms=argc>4?atoi(argv[4]):100; FILE*log=argc>5&&strcmp(argv[5],"-")?fopen(argv[5],"w"):stdout;
  for(int e=0;e<events;e++){
    fprintf(log,"start processing event #%d t=%lld\n",e,now_ns()); fflush(log);
    if(e==hot) sink+=hot_kernel(n,3); else sink+=other_work(n/4);
    fprintf(log,"done processing event #%d t=%lld\n",e,now_ns()); fflush(log);
    usleep(pause_ms*1000);
  }
  printf("events %d checksum %g\n",events,(double)sink); return 0;}
