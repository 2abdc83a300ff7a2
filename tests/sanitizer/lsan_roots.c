/* Linked first into every program of a sanitizer build (Makefile: LSAN_ROOTS): the globals
 * LeakSanitizer scans at exit for pointers into the heap are the program's own and its
 * shared libraries', not the sanitizer runtime's own tables (6 MB of stack depot and
 * allocator state, linked in with -static-libasan, before this object). Scanning them was
 * about a third of the cpu of a short sanitized process (boxgate --version: 37-41 ms, 27-28
 * ms without), and the suite starts thousands. No user block is held from them (and the
 * allocator's state, which points at every block, LeakSanitizer leaves out itself).
 *
 * How: use_globals=0 (LeakSanitizer's own scan of every writable segment is off) and each
 * writable segment registered as a root region instead, the program's own from the first
 * global of this object on: [data_start, _edata) and [bss_start, _end), the link placing
 * this object's .data and .bss ahead of every other object of the program's (the crt files
 * and the runtime only come before). A layout other than that stops the program at its
 * start: the whole segment cannot stand in, it holds the allocator's own state, which points
 * at every block. test_lsan_roots.c checks that a leak is still found. */
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sanitizer/lsan_interface.h>

char lsan_roots_data_start[1] = {1};
char lsan_roots_bss_start[1];
extern char __bss_start[], _edata[], _end[];

const char *__lsan_default_options(void)
{
	return "use_globals=0";
}

static void add(uintptr_t begin, uintptr_t end)
{
	if (end > begin)
		__lsan_register_root_region((void *)begin, end - begin);
}

static int add_module(struct dl_phdr_info *info, size_t size, void *unused)
{
	(void)size;
	(void)unused;
	uintptr_t data = (uintptr_t)lsan_roots_data_start, bss = (uintptr_t)lsan_roots_bss_start;
	/* a shared sanitizer runtime: its allocator's state points at every block */
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	if (strstr(name, "libasan.so") || strstr(name, "libubsan.so") || strstr(name, "liblsan.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type != PT_LOAD || !(p->p_flags & PF_W))
			continue;
		uintptr_t b = info->dlpi_addr + p->p_vaddr, e = b + p->p_memsz;
		bool ours = data >= b && data < e;
		/* the layout this relies on: this object's .data in .data, its .bss at or
		 * after __bss_start, both inside this segment */
		if (!ours) {
			add(b, e);
			continue;
		}
		if (!(data < (uintptr_t)_edata && bss >= (uintptr_t)__bss_start && bss < e &&
		      (uintptr_t)_end <= e)) {
			static const char msg[] = "lsan_roots: this program's globals are not laid "
						  "out as tests/sanitizer/lsan_roots.c expects\n";
			(void)!write(2, msg, sizeof msg - 1);
			abort();
		}
		add(data, (uintptr_t)_edata);
		add(bss, (uintptr_t)_end);
	}
	return 0;
}

__attribute__((constructor)) static void lsan_roots(void)
{
	dl_iterate_phdr(add_module, NULL);
}
