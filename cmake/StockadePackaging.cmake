# What ships, and the Debian package of it (`make install`, `make deb`; README, "Install"):
# stockade, its man pages and shell completions (made from the built binary's --help, so they
# cannot name a verb or flag it lacks), the systemd unit of serve --http, an example tenants
# file, and the copyright and changelog Debian wants beside them.
include(GNUInstallDirs)

find_program(STOCKADE_HELP2MAN help2man REQUIRED)
set(STOCKADE_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)
set(STOCKADE_MAN_DIR ${PROJECT_BINARY_DIR}/man)
set(STOCKADE_COMPLETIONS_DIR ${PROJECT_BINARY_DIR}/completions)

# The changelog's latest version is the project's: a release bumps both or configure fails.
file(STRINGS ${STOCKADE_PACKAGING_DIR}/changelog changelog_top LIMIT_COUNT 1)
if(NOT changelog_top MATCHES "^stockade \\(${PROJECT_VERSION}\\) ")
    message(FATAL_ERROR "packaging/changelog's latest entry is not version ${PROJECT_VERSION}: "
                        "${changelog_top}")
endif()

# One stamp per generator: the verbs (and so the man pages' names) are the binary's to say.
add_custom_command(OUTPUT ${STOCKADE_MAN_DIR}.stamp
    COMMAND ${STOCKADE_PACKAGING_DIR}/gen-man.sh $<TARGET_FILE:stockade> ${STOCKADE_MAN_DIR}
            ${STOCKADE_PACKAGING_DIR}/changelog
    COMMAND ${CMAKE_COMMAND} -E touch ${STOCKADE_MAN_DIR}.stamp
    DEPENDS stockade ${STOCKADE_PACKAGING_DIR}/gen-man.sh ${STOCKADE_PACKAGING_DIR}/cli-help.bash
            ${STOCKADE_PACKAGING_DIR}/changelog
    COMMENT "Making the man pages from stockade --help"
    VERBATIM)
add_custom_command(OUTPUT ${STOCKADE_COMPLETIONS_DIR}.stamp
    COMMAND ${STOCKADE_PACKAGING_DIR}/gen-completions.sh $<TARGET_FILE:stockade>
            ${STOCKADE_COMPLETIONS_DIR}
    COMMAND ${CMAKE_COMMAND} -E touch ${STOCKADE_COMPLETIONS_DIR}.stamp
    DEPENDS stockade ${STOCKADE_PACKAGING_DIR}/gen-completions.sh
            ${STOCKADE_PACKAGING_DIR}/cli-help.bash
    COMMENT "Making the shell completions from stockade --help"
    VERBATIM)
set(changelog_gz ${PROJECT_BINARY_DIR}/packaging/changelog.gz)
add_custom_command(OUTPUT ${changelog_gz}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/packaging
    COMMAND sh -c "gzip -9n < \"$0\" > \"$1\"" ${STOCKADE_PACKAGING_DIR}/changelog ${changelog_gz}
    DEPENDS ${STOCKADE_PACKAGING_DIR}/changelog
    VERBATIM)
add_custom_target(stockade_docs ALL DEPENDS ${STOCKADE_MAN_DIR}.stamp
                  ${STOCKADE_COMPLETIONS_DIR}.stamp ${changelog_gz})

# `make install` and the package build first themselves (Makefile); CPack must not build `all`
# again, least of all from the packaging test in a tree other builds share.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

install(TARGETS stockade RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${STOCKADE_MAN_DIR}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${STOCKADE_COMPLETIONS_DIR}/stockade.bash
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions RENAME stockade)
install(FILES ${STOCKADE_COMPLETIONS_DIR}/stockade.fish
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/fish/vendor_completions.d)
install(FILES ${STOCKADE_PACKAGING_DIR}/tenants.example.json
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
# The seccomp profile a container needs to let Stockade build its sandboxes (doctor names it).
install(FILES ${STOCKADE_PACKAGING_DIR}/kubernetes/seccomp-stockade-nested.json
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/stockade)
install(FILES ${STOCKADE_PACKAGING_DIR}/copyright ${changelog_gz} DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Where the prefix decides the place, decided at install time (CPack installs a tree configured
# for /usr/local with the prefix /usr): a package's zsh completions go to vendor-completions, its
# unit to /lib/systemd/system (Debian 12) and lintian's overrides (each says why) beside them; a
# local install's to site-functions and PREFIX/lib/systemd/system. The unit's ExecStart names the
# installed binary. file(INSTALL) honours DESTDIR and lists the files in install_manifest.txt,
# for `make uninstall`.
install(CODE "
    # A stripped install (make install, the package) drops .comment too, as dh_strip does.
    if(CMAKE_INSTALL_DO_STRIP)
        execute_process(COMMAND ${CMAKE_OBJCOPY} --remove-section=.comment
            \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/stockade
            COMMAND_ERROR_IS_FATAL ANY)
    endif()
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
        set(zsh_dir /usr/share/zsh/vendor-completions)
        set(unit_dir /lib/systemd/system)
        file(INSTALL ${STOCKADE_PACKAGING_DIR}/lintian-overrides
             DESTINATION /usr/share/lintian/overrides RENAME stockade)
    else()
        set(zsh_dir \${CMAKE_INSTALL_PREFIX}/share/zsh/site-functions)
        set(unit_dir \${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
    endif()
    file(INSTALL ${STOCKADE_COMPLETIONS_DIR}/_stockade DESTINATION \${zsh_dir})
    file(READ ${STOCKADE_PACKAGING_DIR}/stockade-http.service unit)
    string(REPLACE /usr/local/bin/stockade \${CMAKE_INSTALL_PREFIX}/bin/stockade unit \"\${unit}\")
    file(WRITE ${PROJECT_BINARY_DIR}/packaging/stockade-http.service \"\${unit}\")
    file(INSTALL ${PROJECT_BINARY_DIR}/packaging/stockade-http.service DESTINATION \${unit_dir})
")

# The Debian package, by CPack's DEB generator rather than debhelper: `cpack -G DEB` packages
# what the tree it runs in built, by the install rules above (so `make install` and the package
# cannot differ), and the packaging test packages the dev build's binary with no second build.
set(CPACK_PACKAGE_NAME stockade)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Stockade maintainers <maintainers@users.noreply.a-seed-fec9fc33.example>")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "sandboxed tool runner for AI coding agents
Stockade runs an AI coding agent's tool calls (read, write, edit, grep,
glob, bash) over the Model Context Protocol, each session in its own
sandbox: fresh Linux namespaces, seccomp, Landlock and resource limits,
a read-only image and the project. stockade run puts any command in the
same sandbox; stockade serve --http serves many tenants' sessions (its
systemd unit is included, not enabled).")
# Shared libraries from dpkg-shlibdeps. ripgrep is a Depends, not a Recommends: grep and glob,
# two of the seven tools every session offers, run the host's rg (in the sandbox, or carried
# into one on a stored image) and fail without it. libarchive13 is named here because stockade
# loads it with dlopen (images/libarchive.h), which dpkg-shlibdeps does not see: `image import`,
# `pull` and `build` need it. mmdebstrap only serves `image build --suite`.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "ripgrep, libarchive13 (>= 3.6)")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS mmdebstrap)
set(CPACK_STRIP_FILES ON)
# Files 0644 and directories 0755 whatever the umask of whoever builds.
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
    GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_GENERATOR DEB)
include(CPack)
